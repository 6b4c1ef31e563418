package org.apache.iceberg.rest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.DataInputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.ManifestContent;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestReader;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.aws.s3.S3FileIO;
import org.apache.iceberg.deletes.PositionDeleteIndex;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.io.SeekableInputStream;
import org.apache.iceberg.util.ContentFileUtil;

/**
 * icebench's second judge (harness/judge/reference.py): Iceberg Java, the reference
 * implementation, loads a table as its readers would. One request a line on stdin, {"metadata":
 * LOCATION, "properties": {FileIO properties}}; one answer a line on stdout, {"ok": true, counts}
 * or {"ok": false, "error": "what Java refused"}. Loaded: the metadata file (TableMetadataParser
 * validates refs, logs and sequence numbers), every snapshot's manifest list, every manifest of the
 * current snapshot with its entries, and each live deletion vector's blob. Properties (S3 keys) arrive on stdin, never in argv.
 */
public final class IcebenchReferenceJudge {
  private static final ObjectMapper JSON = new ObjectMapper();

  private IcebenchReferenceJudge() {}

  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
    String line;
    while ((line = in.readLine()) != null) {
      ObjectNode answer = JSON.createObjectNode();
      try {
        JsonNode request = JSON.readTree(line);
        String location = request.get("metadata").asText();
        Map<String, String> properties = new HashMap<>();
        request.path("properties").fields()
            .forEachRemaining(entry -> properties.put(entry.getKey(), entry.getValue().asText()));
        try (FileIO io = fileIO(location, properties)) {
          judge(io, location, answer);
        }
        answer.put("ok", true);
      } catch (Exception | StackOverflowError | AssertionError e) {
        answer.removeAll();
        answer.put("ok", false);
        String message = e.getMessage() == null ? "" : ": " + e.getMessage();
        answer.put("error", e.getClass().getSimpleName() + message);
      }
      out.println(answer);
    }
  }

  private static void judge(FileIO io, String location, ObjectNode answer) throws Exception {
    TableMetadata metadata = TableMetadataParser.read(io, location);
    Map<Integer, PartitionSpec> specs = metadata.specsById();
    int manifestLists = 0;
    for (Snapshot snapshot : metadata.snapshots()) {
      snapshot.allManifests(io);
      manifestLists++;
    }
    int manifests = 0;
    long entries = 0;
    Map<String, Long> dataFileRows = new HashMap<>();
    List<DeleteFile> deletionVectors = new ArrayList<>();
    Snapshot current = metadata.currentSnapshot();
    if (current != null) {
      for (ManifestFile manifest : current.allManifests(io)) {
        manifests++;
        if (manifest.content() == ManifestContent.DATA) {
          try (ManifestReader<DataFile> reader = ManifestFiles.read(manifest, io, specs)) {
            for (DataFile file : reader) {
              dataFileRows.put(file.location(), file.recordCount());
              entries++;
            }
          }
        } else {
          try (ManifestReader<DeleteFile> reader = ManifestFiles.readDeleteManifest(manifest, io, specs)) {
            for (DeleteFile file : reader) {
              if (ContentFileUtil.isDV(file)) {
                deletionVectors.add(file.copy());
              }
              entries++;
            }
          }
        }
      }
    }
    long deletedPositions = 0;
    Set<String> vectorised = new HashSet<>();
    for (DeleteFile vector : deletionVectors) {
      deletedPositions += readDeletionVector(io, vector, dataFileRows, vectorised);
    }
    answer.put("deletion_vectors", deletionVectors.size());
    answer.put("deleted_positions", deletedPositions);
    answer.put("format_version", metadata.formatVersion());
    answer.put("manifest_lists", manifestLists);
    answer.put("manifests", manifests);
    answer.put("entries", entries);
  }

  /**
   * The vector's blob read as Java's readers read it (PositionDeleteIndex checks its length, magic
   * number, CRC and that it holds as many positions as the manifest says); it must mark positions
   * of its data file's rows only, and be that live file's one vector (the spec's "at most one").
   */
  private static long readDeletionVector(
      FileIO io, DeleteFile vector, Map<String, Long> dataFileRows, Set<String> vectorised) throws Exception {
    String target = vector.referencedDataFile();
    byte[] blob = new byte[Math.toIntExact(vector.contentSizeInBytes())];
    try (SeekableInputStream stream = io.newInputFile(vector.location()).newStream()) {
      stream.seek(vector.contentOffset());
      new DataInputStream(stream).readFully(blob);
    }
    PositionDeleteIndex index = PositionDeleteIndex.deserialize(blob, vector);
    Long rows = dataFileRows.get(target);
    if (rows != null) {
      long[] last = {-1};
      index.forEach(position -> last[0] = Math.max(last[0], position));
      if (last[0] >= rows) {
        throw new IllegalStateException(String.format(
            "the deletion vector in %s marks position %d of %s, which holds %d rows",
            vector.location(), last[0], target, rows));
      }
      if (!vectorised.add(target)) {
        throw new IllegalStateException("two deletion vectors for the live data file " + target);
      }
    }
    return index.cardinality();
  }

  private static FileIO fileIO(String location, Map<String, String> properties) {
    if (location.startsWith("s3://") || location.startsWith("s3a://")) {
      S3FileIO io = new S3FileIO();
      io.initialize(properties);
      return io;
    }
    return new ReadOnlyLocalFileIO();
  }

  /** The judge reads only. */
  private static final class ReadOnlyLocalFileIO extends IcebenchLocalFileIO {
    @Override
    public OutputFile newOutputFile(String path) {
      throw new UnsupportedOperationException("the reference judge reads only: " + path);
    }

    @Override
    public void deleteFile(String path) {
      throw new UnsupportedOperationException("the reference judge reads only: " + path);
    }
  }
}
