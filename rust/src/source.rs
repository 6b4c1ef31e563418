//! The source set as generators/source.py reads it: the files of manifest.json in its order,
//! record batches of exactly `batch_rows` rows across file borders, the first `limit_rows` only,
//! read a row group at a time so memory stays that of one row group.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Schema, SchemaRef};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReaderBuilder};
use serde::Deserialize;

use crate::contract::{Failure, one_line};

#[derive(Debug, Deserialize)]
struct Manifest {
    rows: usize,
    files: Vec<ManifestFile>,
}

#[derive(Debug, Deserialize)]
struct ManifestFile {
    name: PathBuf,
}

pub struct ParquetSource {
    pub directory: PathBuf,
    pub paths: Vec<PathBuf>,
    pub rows: usize,
    pub manifest_rows: usize, // every row of the files; `rows` may keep only the first
    pub batch_rows: usize,
    pub schema: SchemaRef,
}

impl ParquetSource {
    /// Checks the folder, its manifest and every file's schema before any write.
    pub fn open(directory: &Path, batch_rows: usize, limit_rows: Option<usize>) -> Result<Self, Failure> {
        if !directory.is_dir() {
            return Err(Failure::bad_input(format!(
                "source {} does not exist or is not a folder",
                directory.display()
            )));
        }
        let manifest_path = directory.join("manifest.json");
        let text = std::fs::read_to_string(&manifest_path)
            .map_err(|e| Failure::bad_input(format!("no manifest: {}: {e}", manifest_path.display())))?;
        let manifest: Manifest = serde_json::from_str(&text).map_err(|e| {
            Failure::bad_input(format!("manifest {} is unreadable: {e}", manifest_path.display()))
        })?;
        let paths: Vec<PathBuf> = manifest.files.iter().map(|f| directory.join(&f.name)).collect();
        let mut schema: Option<SchemaRef> = None;
        for path in &paths {
            let found = read_schema(path)?;
            match &schema {
                None => schema = Some(found),
                Some(expected) if !same_fields(expected, &found) => {
                    return Err(Failure::bad_input(format!(
                        "source file {}: schema differs from {}",
                        path.display(),
                        manifest_path.display()
                    )));
                }
                Some(_) => {}
            }
        }
        let rows = limit_rows.map_or(manifest.rows, |limit| limit.min(manifest.rows));
        let schema = schema.unwrap_or_else(|| Arc::new(Schema::empty()));
        Ok(Self {
            directory: directory.to_path_buf(),
            paths,
            rows,
            manifest_rows: manifest.rows,
            batch_rows,
            schema,
        })
    }

    pub fn batch_count(&self) -> usize {
        self.rows.div_ceil(self.batch_rows)
    }

    /// The first file that cannot be read to its end, named (None: every file reads).
    pub fn first_unreadable(&self) -> Option<Failure> {
        self.batches().find_map(Result::err)
    }

    /// Batches of exactly `batch_rows` rows (the last may be shorter), across file borders.
    pub fn batches(&self) -> impl Iterator<Item = Result<RecordBatch, Failure>> + '_ {
        Batches {
            source: self,
            file: 0,
            open: None,
            row_group: 0,
            pending: Vec::new(),
            pending_rows: 0,
            remaining: self.rows,
        }
    }
}

struct Batches<'a> {
    source: &'a ParquetSource,
    file: usize,
    open: Option<(File, ArrowReaderMetadata)>,
    row_group: usize,
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    remaining: usize,
}

impl Batches<'_> {
    /// The next row group's batches, or None when every file is read.
    fn next_row_group(&mut self) -> Option<Result<Vec<RecordBatch>, Failure>> {
        while self.file < self.source.paths.len() {
            let path = &self.source.paths[self.file];
            let unreadable = |e: &dyn std::error::Error| {
                Failure::bad_input(format!("source file {} is unreadable: {}", path.display(), one_line(e)))
            };
            if self.open.is_none() {
                let opened = File::open(path).map_err(|e| unreadable(&e)).and_then(|file| {
                    let metadata =
                        ArrowReaderMetadata::load(&file, Default::default()).map_err(|e| unreadable(&e))?;
                    Ok((file, metadata))
                });
                match opened {
                    Ok(opened) => self.open = Some(opened),
                    Err(failure) => return Some(Err(failure)),
                }
            }
            let (file, metadata) = self.open.as_ref()?;
            if self.row_group >= metadata.metadata().num_row_groups() {
                self.file += 1;
                self.row_group = 0;
                self.open = None;
                continue;
            }
            let reader = file.try_clone().map_err(|e| unreadable(&e)).and_then(|file| {
                ParquetRecordBatchReaderBuilder::new_with_metadata(file, metadata.clone())
                    .with_batch_size(self.source.batch_rows)
                    .with_row_groups(vec![self.row_group])
                    .build()
                    .map_err(|e| unreadable(&e))
            });
            self.row_group += 1;
            return Some(
                reader.and_then(|reader| reader.map(|batch| batch.map_err(|e| unreadable(&e))).collect()),
            );
        }
        None
    }

    fn take_pending(&mut self, rows: usize) -> Result<RecordBatch, Failure> {
        let combined = arrow_select::concat::concat_batches(&self.source.schema, &self.pending)
            .map_err(|e| Failure::bad_input(format!("source {}: {e}", self.source.directory.display())))?;
        let batch = combined.slice(0, rows);
        let rest = combined.slice(rows, combined.num_rows() - rows);
        self.pending_rows = rest.num_rows();
        self.pending = if rest.num_rows() > 0 { vec![rest] } else { Vec::new() };
        Ok(batch)
    }
}

impl Iterator for Batches<'_> {
    type Item = Result<RecordBatch, Failure>;

    fn next(&mut self) -> Option<Self::Item> {
        let batch_rows = self.source.batch_rows;
        while self.pending_rows < batch_rows && self.remaining > 0 {
            match self.next_row_group() {
                None => break, // the files hold fewer rows than the manifest says: what there is
                Some(Err(failure)) => return Some(Err(failure)),
                Some(Ok(pieces)) => {
                    for piece in pieces {
                        let piece = piece.slice(0, piece.num_rows().min(self.remaining));
                        self.remaining -= piece.num_rows();
                        self.pending_rows += piece.num_rows();
                        self.pending.push(piece);
                    }
                }
            }
        }
        if self.pending_rows == 0 {
            return None;
        }
        let rows = self.pending_rows.min(batch_rows);
        Some(self.take_pending(rows))
    }
}

fn read_schema(path: &Path) -> Result<SchemaRef, Failure> {
    let file = File::open(path).map_err(|e| {
        Failure::bad_input(format!("source file {} listed in manifest.json is missing: {e}", path.display()))
    })?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| {
        Failure::bad_input(format!(
            "source file {} is not a readable parquet file: {}",
            path.display(),
            one_line(&e)
        ))
    })?;
    let schema = builder.schema().as_ref().clone().with_metadata(Default::default());
    Ok(Arc::new(schema))
}

fn same_fields(expected: &Schema, found: &Schema) -> bool {
    expected.fields().len() == found.fields().len()
        && expected
            .fields()
            .iter()
            .zip(found.fields())
            .all(|(a, b)| a.name() == b.name() && a.data_type() == b.data_type())
}

/// The type as the table's Iceberg type sees it: Arrow's large and view layouts alike, a
/// timestamp's zone only as "has one" (generators write "UTC", Iceberg's Arrow schema "+00:00").
pub fn iceberg_view(data_type: &DataType) -> String {
    match data_type {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "string".into(),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => "binary".into(),
        DataType::Timestamp(unit, zone) => format!("timestamp[{unit:?}, utc={}]", zone.is_some()),
        DataType::List(item)
        | DataType::LargeList(item)
        | DataType::ListView(item)
        | DataType::LargeListView(item) => {
            format!("list<{}>", iceberg_view(item.data_type()))
        }
        DataType::Struct(fields) => {
            let inner: Vec<String> =
                fields.iter().map(|f| format!("{}: {}", f.name(), iceberg_view(f.data_type()))).collect();
            format!("struct<{}>", inner.join(", "))
        }
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => {
                format!("map<{}, {}>", iceberg_view(kv[0].data_type()), iceberg_view(kv[1].data_type()))
            }
            other => format!("map<{other:?}>"),
        },
        other => format!("{other:?}"),
    }
}

/// The source must fit the table as it is: no unknown columns, no changed types.
pub fn check_schema(source: &ParquetSource, table_schema: &Schema, table_name: &str) -> Result<(), Failure> {
    for field in source.schema.fields() {
        let Ok(table_field) = table_schema.field_with_name(field.name()) else {
            return Err(Failure::bad_input(format!(
                "source {}: column {} is not in table {table_name}",
                source.directory.display(),
                field.name()
            )));
        };
        if iceberg_view(field.data_type()) != iceberg_view(table_field.data_type()) {
            return Err(Failure::bad_input(format!(
                "source {}: column {} is {}, table {table_name} has {}",
                source.directory.display(),
                field.name(),
                field.data_type(),
                table_field.data_type()
            )));
        }
    }
    Ok(())
}
