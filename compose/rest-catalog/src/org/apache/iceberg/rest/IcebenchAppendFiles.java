package org.apache.iceberg.rest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.Metrics;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.StructLike;
import org.apache.iceberg.Table;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.UpdateProperties;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Type;

/**
 * Iceberg Java appends parquet files, already under the table's location, to a table in one fast
 * append, with the table properties given set in the same commit (harness/services/iceberg_java.py): the set-up of a table whose format version pyiceberg
 * cannot write (v3). One request on stdin, {"catalog": {Java catalog properties, "name"}, "table":
 * [namespace..., name], "properties": {table properties}, "files": [{path, size, records, partition: [base64 of Iceberg's single-value
 * serialization or null], column_sizes, value_counts, null_value_counts, nan_value_counts,
 * lower_bounds, upper_bounds (base64 values), split_offsets}]}; one answer on stdout, {"ok": true,
 * "snapshot_id": N} or {"ok": false, "error": "what Java refused"}. The catalog's secrets arrive on
 * stdin, never in argv.
 */
public final class IcebenchAppendFiles {
  private static final ObjectMapper JSON = new ObjectMapper();

  private IcebenchAppendFiles() {}

  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
    ObjectNode answer = JSON.createObjectNode();
    try {
      JsonNode request = JSON.readTree(new String(System.in.readAllBytes(), StandardCharsets.UTF_8));
      Map<String, String> properties = new HashMap<>();
      request.get("catalog").fields()
          .forEachRemaining(entry -> properties.put(entry.getKey(), entry.getValue().asText()));
      String name = properties.remove("name");
      Catalog catalog = CatalogUtil.buildIcebergCatalog(name, properties, null);
      List<String> parts = new ArrayList<>();
      request.get("table").forEach(part -> parts.add(part.asText()));
      TableIdentifier identifier = TableIdentifier.of(
          Namespace.of(parts.subList(0, parts.size() - 1).toArray(new String[0])),
          parts.get(parts.size() - 1));
      Table table = catalog.loadTable(identifier);
      Transaction transaction = table.newTransaction();
      UpdateProperties update = transaction.updateProperties();
      request.path("properties").fields().forEachRemaining(e -> update.set(e.getKey(), e.getValue().asText()));
      update.commit();
      AppendFiles append = transaction.newFastAppend();
      for (JsonNode file : request.get("files")) {
        append.appendFile(dataFile(table.spec(), file));
      }
      append.commit();
      transaction.commitTransaction();
      answer.put("ok", true);
      answer.put("snapshot_id", table.currentSnapshot().snapshotId());
      if (catalog instanceof AutoCloseable closeable) {
        closeable.close();
      }
    } catch (Exception | AssertionError e) {
      answer.removeAll();
      answer.put("ok", false);
      String message = e.getMessage() == null ? "" : ": " + e.getMessage();
      answer.put("error", e.getClass().getSimpleName() + message);
    }
    out.println(answer);
  }

  private static DataFile dataFile(PartitionSpec spec, JsonNode file) {
    Metrics metrics = new Metrics(
        file.get("records").asLong(),
        longs(file.get("column_sizes")),
        longs(file.get("value_counts")),
        longs(file.get("null_value_counts")),
        longs(file.get("nan_value_counts")),
        buffers(file.get("lower_bounds")),
        buffers(file.get("upper_bounds")));
    List<Long> offsets = new ArrayList<>();
    file.path("split_offsets").forEach(offset -> offsets.add(offset.asLong()));
    DataFiles.Builder builder = DataFiles.builder(spec)
        .withPath(file.get("path").asText())
        .withFormat(FileFormat.PARQUET)
        .withFileSizeInBytes(file.get("size").asLong())
        .withMetrics(metrics)
        .withSplitOffsets(offsets);
    if (spec.isPartitioned()) {
      builder.withPartition(partition(spec, file.get("partition")));
    }
    return builder.build();
  }

  /** The partition tuple from its values' single-value serialization (null stays null). */
  private static StructLike partition(PartitionSpec spec, JsonNode values) {
    List<org.apache.iceberg.types.Types.NestedField> fields = spec.partitionType().fields();
    Object[] tuple = new Object[fields.size()];
    for (int i = 0; i < tuple.length; i++) {
      JsonNode value = values.get(i);
      Type type = fields.get(i).type();
      tuple[i] = value.isNull() ? null : Conversions.fromByteBuffer(type, decode(value));
    }
    return new StructLike() {
      @Override
      public int size() {
        return tuple.length;
      }

      @Override
      public <T> T get(int pos, Class<T> javaClass) {
        return javaClass.cast(tuple[pos]);
      }

      @Override
      public <T> void set(int pos, T value) {
        tuple[pos] = value;
      }
    };
  }

  private static Map<Integer, Long> longs(JsonNode counts) {
    return byFieldId(counts, JsonNode::asLong);
  }

  private static Map<Integer, ByteBuffer> buffers(JsonNode bounds) {
    return byFieldId(bounds, IcebenchAppendFiles::decode);
  }

  private static <V> Map<Integer, V> byFieldId(JsonNode values, Function<JsonNode, V> convert) {
    if (values == null || values.isNull()) {
      return null;
    }
    Map<Integer, V> byId = new HashMap<>();
    values.fields().forEachRemaining(e -> byId.put(Integer.parseInt(e.getKey()), convert.apply(e.getValue())));
    return byId;
  }

  private static ByteBuffer decode(JsonNode value) {
    return ByteBuffer.wrap(Base64.getDecoder().decode(value.asText()));
  }
}
