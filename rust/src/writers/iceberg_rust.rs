//! `iceberg-rust`: the source's batches through the crate's own writer stack (parquet writer,
//! rolling file writer at the table's target file size, a fanout writer per partition), then one
//! fast-append transaction.

use std::sync::Arc;
use std::time::Instant;

use arrow_array::{RecordBatch, new_null_array};
use arrow_schema::SchemaRef;
use iceberg::arrow::{RecordBatchPartitionSplitter, schema_to_arrow_schema};
use iceberg::spec::{DataFile, DataFileFormat};
use iceberg::transaction::{ApplyTransactionAction, Transaction};
use iceberg::writer::base_writer::data_file_writer::DataFileWriterBuilder;
use iceberg::writer::file_writer::ParquetWriterBuilder;
use iceberg::writer::file_writer::location_generator::{DefaultFileNameGenerator, DefaultLocationGenerator};
use iceberg::writer::file_writer::rolling_writer::RollingFileWriterBuilder;
use iceberg::writer::partitioning::PartitioningWriter;
use iceberg::writer::partitioning::fanout_writer::FanoutWriter;
use iceberg::writer::partitioning::unpartitioned_writer::UnpartitionedWriter;

use super::{Job, Writer};
use crate::contract::{Failure, Operation};
use crate::timer::StepTimer;

type FileWriterBuilder =
    DataFileWriterBuilder<ParquetWriterBuilder, DefaultLocationGenerator, DefaultFileNameGenerator>;

/// Unpartitioned tables get one rolling writer; partitioned ones a writer per partition value.
#[allow(clippy::large_enum_variant, reason = "one value per run: a box would add a hop to each batch")]
enum Files {
    Unpartitioned(UnpartitionedWriter<FileWriterBuilder>),
    Fanout(FanoutWriter<FileWriterBuilder>, RecordBatchPartitionSplitter),
}

impl Files {
    async fn write(&mut self, batch: RecordBatch) -> iceberg::Result<()> {
        match self {
            Files::Unpartitioned(writer) => writer.write(batch).await,
            Files::Fanout(writer, splitter) => {
                for (key, part) in splitter.split(&batch)? {
                    writer.write(key, part).await?;
                }
                Ok(())
            }
        }
    }

    async fn close(self) -> iceberg::Result<Vec<DataFile>> {
        match self {
            Files::Unpartitioned(writer) => writer.close().await,
            Files::Fanout(writer, _) => writer.close().await,
        }
    }
}

pub const WRITER: Writer = Writer {
    name: "iceberg-rust",
    operations: &[(Operation::Append, |job, timer| Box::pin(append(job, timer)))],
};

async fn append(job: Job, timer: &mut StepTimer) -> Result<(), Failure> {
    let Job { catalog, table, source, mut progress } = job;
    let metadata = table.metadata();
    let schema = metadata.current_schema().clone();
    let arrow_schema: SchemaRef = Arc::new(schema_to_arrow_schema(&schema)?);
    let properties = metadata.table_properties()?;
    let rolling = RollingFileWriterBuilder::new(
        ParquetWriterBuilder::from_table_properties(&properties, schema.clone()),
        properties.write_target_file_size_bytes,
        table.file_io().clone(),
        DefaultLocationGenerator::new(metadata)?,
        DefaultFileNameGenerator::new(uuid::Uuid::now_v7().to_string(), None, DataFileFormat::Parquet),
    );
    let builder = DataFileWriterBuilder::new(rolling);
    let partition_spec = metadata.default_partition_spec().clone();
    let mut files = if partition_spec.is_unpartitioned() {
        Files::Unpartitioned(UnpartitionedWriter::new(builder))
    } else {
        let splitter =
            RecordBatchPartitionSplitter::try_new_with_computed_values(schema.clone(), partition_spec)?;
        Files::Fanout(FanoutWriter::new(builder), splitter)
    };
    let mut fed = 0;
    for batch in source.batches() {
        let batch = batch?;
        fed += batch.num_rows();
        progress.fed(fed);
        let started = Instant::now();
        files.write(conform(&batch, &arrow_schema)?).await?;
        timer.step_done(started, fed);
    }
    let closing = Instant::now();
    let data_files = files.close().await?;
    if let Some(last) = timer.steps.last_mut() {
        *last += closing.elapsed().as_secs_f64(); // the last files are finished at close
    }
    timer.before_commit(fed);
    let started = Instant::now();
    let transaction = Transaction::new(&table);
    let transaction = transaction.fast_append().add_data_files(data_files).apply(transaction)?;
    let committed = transaction.commit(catalog.as_ref()).await?;
    timer.commit_done(started, fed, source.rows, committed.metadata().current_snapshot_id());
    Ok(())
}

/// The batch as the table's Arrow schema (its field ids, its column order): columns cast where
/// only the layout differs (large strings, the zone's spelling), columns the source lacks null.
fn conform(batch: &RecordBatch, target: &SchemaRef) -> Result<RecordBatch, Failure> {
    let columns = target
        .fields()
        .iter()
        .map(|field| match batch.column_by_name(field.name()) {
            None => Ok(new_null_array(field.data_type(), batch.num_rows())),
            Some(column) if column.data_type() == field.data_type() => Ok(column.clone()),
            Some(column) => arrow_cast::cast(column, field.data_type())
                .map_err(|e| Failure::bad_input(format!("column {}: {e}", field.name()))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    RecordBatch::try_new(target.clone(), columns)
        .map_err(|e| Failure::bad_input(format!("source batch: {e}")))
}
