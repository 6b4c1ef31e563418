package org.icebench.rest;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.io.PositionOutputStream;
import org.apache.iceberg.io.SeekableInputStream;

/**
 * Minimal Iceberg FileIO over S3 REST (AWS Signature V4, java.net.http), for catalog metadata
 * files. Properties: s3.endpoint, s3.region | client.region, s3.path-style-access,
 * s3.access-key-id / s3.secret-access-key / s3.session-token (else env AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN).
 */
public class SigV4S3FileIO implements FileIO {
  private static final int CHUNK = 4 << 20; // ranged GET size
  private static final int MAX_ATTEMPTS = 4;
  private static final String EMPTY_SHA256 =
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  private static final DateTimeFormatter AMZ_DATE =
      DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'");

  private Map<String, String> props = new HashMap<>();
  private transient HttpClient http;
  private String endpoint; // scheme://host[:port], no trailing slash; null = AWS
  private String region;
  private boolean pathStyle;
  private String accessKey;
  private String secretKey;
  private String sessionToken;

  @Override
  public void initialize(Map<String, String> properties) {
    props = new HashMap<>(properties);
    region = firstNonNull(props.get("s3.region"), props.get("client.region"),
        System.getenv("AWS_REGION"), "us-east-1");
    endpoint = props.get("s3.endpoint");
    if (endpoint != null) {
      endpoint = endpoint.replaceAll("/+$", "");
    }
    pathStyle = Boolean.parseBoolean(props.getOrDefault("s3.path-style-access",
        endpoint != null ? "true" : "false"));
    accessKey = firstNonNull(props.get("s3.access-key-id"), System.getenv("AWS_ACCESS_KEY_ID"));
    secretKey = firstNonNull(props.get("s3.secret-access-key"),
        System.getenv("AWS_SECRET_ACCESS_KEY"));
    sessionToken = firstNonNull(props.get("s3.session-token"), System.getenv("AWS_SESSION_TOKEN"));
    if (accessKey == null || secretKey == null) {
      throw new IllegalArgumentException(
          "SigV4S3FileIO: no credentials (set AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)");
    }
    http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(10)).build();
  }

  @Override
  public Map<String, String> properties() {
    return props;
  }

  @Override
  public InputFile newInputFile(String location) {
    return new S3InputFile(location, -1);
  }

  @Override
  public InputFile newInputFile(String location, long length) {
    return new S3InputFile(location, length);
  }

  @Override
  public OutputFile newOutputFile(String location) {
    return new S3OutputFile(location);
  }

  @Override
  public void deleteFile(String location) {
    HttpResponse<byte[]> r = send("DELETE", location, null, null, Map.of());
    if (r.statusCode() != 204 && r.statusCode() != 200 && r.statusCode() != 404) {
      throw failure("DELETE", location, r);
    }
  }

  // ---------------------------------------------------------------- S3 request plumbing

  private static String firstNonNull(String... vals) {
    for (String v : vals) {
      if (v != null && !v.isEmpty()) {
        return v;
      }
    }
    return null;
  }

  /** s3://bucket/key -> {bucket, key}. */
  private static String[] split(String location) {
    int i = location.indexOf("://");
    if (i < 0) {
      throw new IllegalArgumentException("Not an S3 location: " + location);
    }
    String rest = location.substring(i + 3);
    int slash = rest.indexOf('/');
    if (slash <= 0 || slash == rest.length() - 1) {
      throw new IllegalArgumentException("Invalid S3 location (no key): " + location);
    }
    return new String[] {rest.substring(0, slash), rest.substring(slash + 1)};
  }

  private static String uriEncode(String s, boolean keepSlash) {
    StringBuilder sb = new StringBuilder();
    for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
      char c = (char) (b & 0xff);
      if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
          || c == '-' || c == '_' || c == '.' || c == '~' || (keepSlash && c == '/')) {
        sb.append(c);
      } else {
        sb.append('%').append(String.format("%02X", b & 0xff));
      }
    }
    return sb.toString();
  }

  private static byte[] hmac(byte[] key, String data) throws Exception {
    Mac mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(key, "HmacSHA256"));
    return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
  }

  private static String hex(byte[] bytes) {
    StringBuilder sb = new StringBuilder(bytes.length * 2);
    for (byte b : bytes) {
      sb.append(String.format("%02x", b & 0xff));
    }
    return sb.toString();
  }

  private static String sha256(byte[] data) throws Exception {
    return hex(MessageDigest.getInstance("SHA-256").digest(data));
  }

  private HttpResponse<byte[]> send(
      String method, String location, byte[] body, String range, Map<String, String> extra) {
    String[] bk = split(location);
    String path;
    String base;
    if (endpoint == null) {
      base = pathStyle ? "https://s3." + region + ".amazonaws.com"
          : "https://" + bk[0] + ".s3." + region + ".amazonaws.com";
    } else if (pathStyle) {
      base = endpoint;
    } else {
      URI e = URI.create(endpoint);
      base = e.getScheme() + "://" + bk[0] + "." + e.getRawAuthority();
    }
    path = (pathStyle ? "/" + uriEncode(bk[0], false) : "") + "/" + uriEncode(bk[1], true);
    URI uri = URI.create(base + path);
    IOException last = null;
    for (int attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      try {
        HttpResponse<byte[]> r = http.send(sign(method, uri, body, range, extra),
            HttpResponse.BodyHandlers.ofByteArray());
        if (r.statusCode() >= 500 && attempt < MAX_ATTEMPTS) {
          Thread.sleep(50L << attempt);
          continue;
        }
        return r;
      } catch (IOException e) {
        last = e;
        try {
          Thread.sleep(50L << attempt);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          break;
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new UncheckedIOException(new IOException("interrupted", e));
      }
    }
    throw new UncheckedIOException(
        new IOException(method + " " + location + " failed: " + last, last));
  }

  private HttpRequest sign(String method, URI uri, byte[] body, String range,
      Map<String, String> extra) throws IOException {
    try {
      String amzDate = ZonedDateTime.now(ZoneOffset.UTC).format(AMZ_DATE);
      String day = amzDate.substring(0, 8);
      String payloadHash = body == null ? EMPTY_SHA256 : sha256(body);
      String host = uri.getHost() + (uri.getPort() == -1 ? "" : ":" + uri.getPort());
      TreeMap<String, String> h = new TreeMap<>();
      h.put("host", host);
      h.put("x-amz-content-sha256", payloadHash);
      h.put("x-amz-date", amzDate);
      if (sessionToken != null) {
        h.put("x-amz-security-token", sessionToken);
      }
      for (Map.Entry<String, String> e : extra.entrySet()) {
        h.put(e.getKey().toLowerCase(), e.getValue());
      }
      StringBuilder canonHeaders = new StringBuilder();
      for (Map.Entry<String, String> e : h.entrySet()) {
        canonHeaders.append(e.getKey()).append(':').append(e.getValue().trim()).append('\n');
      }
      String signedHeaders = String.join(";", h.keySet());
      String canonical = method + "\n" + uri.getRawPath() + "\n\n" + canonHeaders + "\n"
          + signedHeaders + "\n" + payloadHash;
      String scope = day + "/" + region + "/s3/aws4_request";
      String toSign = "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n"
          + sha256(canonical.getBytes(StandardCharsets.UTF_8));
      byte[] k = hmac(("AWS4" + secretKey).getBytes(StandardCharsets.UTF_8), day);
      k = hmac(k, region);
      k = hmac(k, "s3");
      k = hmac(k, "aws4_request");
      String sig = hex(hmac(k, toSign));
      HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(120));
      for (Map.Entry<String, String> e : h.entrySet()) {
        if (!e.getKey().equals("host")) {
          b.header(e.getKey(), e.getValue());
        }
      }
      b.header("Authorization", "AWS4-HMAC-SHA256 Credential=" + accessKey + "/" + scope
          + ", SignedHeaders=" + signedHeaders + ", Signature=" + sig);
      if (range != null) {
        b.header("Range", range);
      }
      switch (method) {
        case "PUT":
          b.PUT(HttpRequest.BodyPublishers.ofByteArray(body));
          break;
        case "HEAD":
          b.method("HEAD", HttpRequest.BodyPublishers.noBody());
          break;
        case "DELETE":
          b.DELETE();
          break;
        default:
          b.GET();
      }
      return b.build();
    } catch (Exception e) {
      throw new IOException("cannot sign request: " + e, e);
    }
  }

  private static RuntimeException failure(String method, String location, HttpResponse<byte[]> r) {
    String msg = new String(r.body() == null ? new byte[0] : r.body(), StandardCharsets.UTF_8);
    if (msg.length() > 300) {
      msg = msg.substring(0, 300);
    }
    return new UncheckedIOException(new IOException(
        method + " " + location + " -> HTTP " + r.statusCode() + " " + msg));
  }

  // ---------------------------------------------------------------- files

  private class S3InputFile implements InputFile {
    private final String location;
    private long length;

    S3InputFile(String location, long length) {
      this.location = location;
      this.length = length;
    }

    @Override
    public long getLength() {
      if (length < 0) {
        HttpResponse<byte[]> r = send("HEAD", location, null, null, Map.of());
        if (r.statusCode() == 404) {
          throw new NotFoundException("File does not exist: %s", location);
        } else if (r.statusCode() != 200) {
          throw failure("HEAD", location, r);
        }
        length = r.headers().firstValueAsLong("Content-Length").orElseThrow();
      }
      return length;
    }

    @Override
    public SeekableInputStream newStream() {
      return new S3InputStream(location, length);
    }

    @Override
    public String location() {
      return location;
    }

    @Override
    public boolean exists() {
      try {
        getLength();
        return true;
      } catch (NotFoundException e) {
        return false;
      }
    }
  }

  /** Reads through a buffer filled by ranged GETs of at least CHUNK bytes. */
  private class S3InputStream extends SeekableInputStream {
    private final String location;
    private long length; // -1 until known
    private long pos;
    private byte[] buf = new byte[0];
    private long bufStart;
    private boolean closed;

    S3InputStream(String location, long length) {
      this.location = location;
      this.length = length;
    }

    @Override
    public long getPos() {
      return pos;
    }

    @Override
    public void seek(long newPos) throws IOException {
      if (newPos < 0) {
        throw new IOException("Cannot seek to negative position " + newPos);
      }
      pos = newPos;
    }

    /** Ensures buf covers pos, returns false at EOF. */
    private boolean fill(int want) throws IOException {
      if (closed) {
        throw new IOException("Stream closed: " + location);
      }
      if (pos >= bufStart && pos < bufStart + buf.length) {
        return true;
      }
      if (length >= 0 && pos >= length) {
        return false;
      }
      long end = pos + Math.max(want, CHUNK) - 1;
      HttpResponse<byte[]> r =
          send("GET", location, null, "bytes=" + pos + "-" + end, Map.of());
      if (r.statusCode() == 416) {
        return false;
      } else if (r.statusCode() == 404) {
        throw new NotFoundException("File does not exist: %s", location);
      } else if (r.statusCode() == 206) {
        r.headers().firstValue("Content-Range").ifPresent(cr -> {
          int slash = cr.lastIndexOf('/');
          if (slash > 0 && !cr.endsWith("*")) {
            length = Long.parseLong(cr.substring(slash + 1).trim());
          }
        });
        buf = r.body();
        bufStart = pos;
      } else if (r.statusCode() == 200) { // server ignored Range: whole object
        buf = r.body();
        bufStart = 0;
        length = buf.length;
        if (pos >= length) {
          return false;
        }
      } else {
        throw new IOException("GET " + location + " -> HTTP " + r.statusCode());
      }
      return buf.length > 0 && pos < bufStart + buf.length;
    }

    @Override
    public int read() throws IOException {
      if (!fill(1)) {
        return -1;
      }
      return buf[(int) (pos++ - bufStart)] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (len == 0) {
        return 0;
      }
      if (!fill(len)) {
        return -1;
      }
      int start = (int) (pos - bufStart);
      int n = Math.min(len, buf.length - start);
      System.arraycopy(buf, start, b, off, n);
      pos += n;
      return n;
    }

    @Override
    public void close() {
      closed = true;
      buf = new byte[0];
    }
  }

  private class S3OutputFile implements OutputFile {
    private final String location;

    S3OutputFile(String location) {
      this.location = location;
    }

    @Override
    public PositionOutputStream create() {
      if (toInputFile().exists()) {
        throw new AlreadyExistsException("Location already exists: %s", location);
      }
      return new S3OutputStream(location, false);
    }

    @Override
    public PositionOutputStream createOrOverwrite() {
      return new S3OutputStream(location, true);
    }

    @Override
    public String location() {
      return location;
    }

    @Override
    public InputFile toInputFile() {
      return new S3InputFile(location, -1);
    }
  }

  /** Buffers in memory, one PUT on close (If-None-Match: * unless overwriting). */
  private class S3OutputStream extends PositionOutputStream {
    private final String location;
    private final boolean overwrite;
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private boolean closed;

    S3OutputStream(String location, boolean overwrite) {
      this.location = location;
      this.overwrite = overwrite;
    }

    @Override
    public long getPos() {
      return out.size();
    }

    @Override
    public void write(int b) throws IOException {
      ensureOpen();
      out.write(b);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      ensureOpen();
      out.write(b, off, len);
    }

    private void ensureOpen() throws IOException {
      if (closed) {
        throw new IOException("Stream closed: " + location);
      }
    }

    @Override
    public void close() throws IOException {
      if (closed) {
        return;
      }
      closed = true;
      Map<String, String> extra = overwrite ? Map.of() : Map.of("if-none-match", "*");
      HttpResponse<byte[]> r = send("PUT", location, out.toByteArray(), null, extra);
      if (r.statusCode() == 412 && !overwrite) {
        throw new AlreadyExistsException("Location already exists: %s", location);
      } else if (r.statusCode() != 200) {
        throw new IOException("PUT " + location + " -> HTTP " + r.statusCode() + " "
            + new String(r.body(), StandardCharsets.UTF_8));
      }
    }
  }
}
