package org.icebench.rest;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executors;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.exceptions.CommitStateUnknownException;
import org.apache.iceberg.exceptions.ForbiddenException;
import org.apache.iceberg.exceptions.NamespaceNotEmptyException;
import org.apache.iceberg.exceptions.NoSuchNamespaceException;
import org.apache.iceberg.exceptions.NoSuchTableException;
import org.apache.iceberg.exceptions.NoSuchViewException;
import org.apache.iceberg.exceptions.NotAuthorizedException;
import org.apache.iceberg.exceptions.NotFoundException;
import org.apache.iceberg.exceptions.ServiceUnavailableException;
import org.apache.iceberg.exceptions.UnprocessableEntityException;
import org.apache.iceberg.exceptions.ValidationException;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.apache.iceberg.rest.CatalogHandlers;
import org.apache.iceberg.rest.IcebenchBridge;
import org.apache.iceberg.rest.RESTUtil;
import org.apache.iceberg.rest.requests.CommitTransactionRequest;
import org.apache.iceberg.rest.requests.CreateNamespaceRequest;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.requests.CreateViewRequest;
import org.apache.iceberg.rest.requests.RegisterTableRequest;
import org.apache.iceberg.rest.requests.RenameTableRequest;
import org.apache.iceberg.rest.requests.UpdateNamespacePropertiesRequest;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.apache.iceberg.rest.responses.ErrorResponse;
import org.apache.iceberg.rest.responses.ErrorResponseParser;
import org.apache.iceberg.shaded.com.fasterxml.jackson.core.JsonProcessingException;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Iceberg REST catalog server: JDK HttpServer routing the REST spec's paths to Iceberg's
 * CatalogHandlers over a JdbcCatalog (design of apache/iceberg-rest-fixture).
 */
public final class RestCatalogServer {
  private static final ObjectMapper MAPPER = IcebenchBridge.mapper();
  private static final Set<String> ROOTS =
      Set.of("config", "namespaces", "tables", "views", "transactions", "oauth");
  // Written by hand: org.apache.iceberg.rest.Endpoint needs shaded httpcore5, absent here.
  private static final String CONFIG_JSON;

  static {
    String ns = "/v1/{prefix}/namespaces";
    String nsOne = ns + "/{namespace}";
    String tbl = nsOne + "/tables/{table}";
    String view = nsOne + "/views/{view}";
    List<String> eps = List.of(
        "GET " + ns, "POST " + ns, "GET " + nsOne, "HEAD " + nsOne, "DELETE " + nsOne,
        "POST " + nsOne + "/properties",
        "GET " + nsOne + "/tables", "POST " + nsOne + "/tables", "POST " + nsOne + "/register",
        "GET " + tbl, "HEAD " + tbl, "POST " + tbl, "DELETE " + tbl, "POST " + tbl + "/metrics",
        "POST /v1/{prefix}/tables/rename", "POST /v1/{prefix}/transactions/commit",
        "GET " + nsOne + "/views", "POST " + nsOne + "/views",
        "GET " + view, "HEAD " + view, "POST " + view, "DELETE " + view,
        "POST /v1/{prefix}/views/rename");
    CONFIG_JSON = "{\"defaults\":{},\"overrides\":{},\"endpoints\":[\""
        + String.join("\",\"", eps) + "\"]}";
  }

  // Env var holding the bearer token every request must carry; unset or empty: no check (compose
  // without a token). Read from the environment only: argv is visible to every local user (ps).
  static final String TOKEN_ENV = "ICEBENCH_REST_TOKEN";
  private static final String BEARER = "Bearer "; // the scheme is case-insensitive (RFC 6750)

  private final JdbcCatalog catalog;
  // SHA-256 of the token, or null when none is required. Comparing digests keeps the comparison
  // constant-time whatever the length of what a client sends.
  private final byte[] expectedTokenDigest;

  private RestCatalogServer(JdbcCatalog catalog, String token) {
    this.catalog = catalog;
    this.expectedTokenDigest = token == null ? null : sha256(token);
  }

  /** Result of a route: HTTP status and an optional JSON body. */
  private static final class Result {
    final int code;
    final Object body;

    Result(int code, Object body) {
      this.code = code;
      this.body = body;
    }
  }

  private static Result ok(Object body) {
    return new Result(200, body);
  }

  private static final Result NO_CONTENT = new Result(204, null);

  // ------------------------------------------------------------------ main

  public static void main(String[] args) throws Exception {
    System.setProperty("sun.net.httpserver.nodelay", "true");
    if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
      System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    }
    // CatalogHandlers retries lost JDBC compare-and-swap races itself; don't log each with a trace
    if (System.getProperty("org.slf4j.simpleLogger.log.org.apache.iceberg.util.Tasks") == null) {
      System.setProperty("org.slf4j.simpleLogger.log.org.apache.iceberg.util.Tasks", "error");
    }
    if (System.getProperty("org.slf4j.simpleLogger.logFile") == null) {
      System.setProperty("org.slf4j.simpleLogger.logFile", "System.out");
    }
    String host = env("ICEBENCH_REST_HOST", "127.0.0.1");
    int port = Integer.parseInt(env("ICEBENCH_REST_PORT", "8181"));
    int threads = Integer.parseInt(env("ICEBENCH_REST_THREADS", "16"));
    String name = env("ICEBENCH_REST_CATALOG_NAME", "icebench");
    Map<String, String> props = new LinkedHashMap<>();
    // Upstream fixture convention: CATALOG_FOO__BAR_BAZ=v -> foo-bar.baz=v
    for (Map.Entry<String, String> e : System.getenv().entrySet()) {
      if (e.getKey().startsWith("CATALOG_")) {
        String k = e.getKey().substring(8).toLowerCase().replace("__", "-").replace('_', '.');
        props.put(k, e.getValue());
      }
    }
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      String v = i + 1 < args.length ? args[i + 1] : null;
      switch (a) {
        case "--host": host = v; i++; break;
        case "--port": port = Integer.parseInt(v); i++; break;
        case "--threads": threads = Integer.parseInt(v); i++; break;
        case "--catalog-name": name = v; i++; break;
        case "--warehouse": props.put("warehouse", v); i++; break;
        case "--jdbc-uri": props.put("uri", v); i++; break;
        case "--prop": {
          int eq = v == null ? -1 : v.indexOf('=');
          if (eq <= 0) {
            die("--prop expects key=value, got: " + v);
          }
          props.put(v.substring(0, eq), v.substring(eq + 1));
          i++;
          break;
        }
        case "-h":
        case "--help":
          System.out.println("usage: RestCatalogServer [--host 127.0.0.1] [--port 8181] "
              + "--warehouse s3://bucket/prefix --jdbc-uri jdbc:sqlite:/path/catalog.db "
              + "[--catalog-name icebench] [--threads 16] [--prop key=value ...]\n"
              + "S3 credentials: env AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.\n"
              + "Bearer token required on every request: env " + TOKEN_ENV + " (unset: none).");
          return;
        default:
          die("unknown argument: " + a);
      }
    }
    if (!props.containsKey("warehouse")) {
      die("missing --warehouse (or CATALOG_WAREHOUSE)");
    }
    if (!props.containsKey("uri")) {
      die("missing --jdbc-uri (or CATALOG_URI)");
    }
    String wh = props.get("warehouse");
    if (!props.containsKey("io-impl") && (wh.startsWith("s3://") || wh.startsWith("s3a://"))) {
      props.put("io-impl", SigV4S3FileIO.class.getName());
    }
    props.putIfAbsent("jdbc.schema-version", "V1"); // V1 = tables + views
    props.putIfAbsent("jdbc.busy_timeout", "30000"); // sqlite-jdbc: wait on locks, don't fail

    String token = env(TOKEN_ENV, null);
    JdbcCatalog catalog = new JdbcCatalog();
    catalog.initialize(name, props);
    RestCatalogServer server = new RestCatalogServer(catalog, token);

    HttpServer http = HttpServer.create(new InetSocketAddress(host, port), 128);
    http.createContext("/", server::handle);
    http.setExecutor(Executors.newFixedThreadPool(threads));
    http.start();
    System.out.println("icebench rest catalog: warehouse=" + wh + " jdbc=" + props.get("uri")
        + " io-impl=" + props.get("io-impl") + " s3.endpoint=" + props.get("s3.endpoint")
        + " auth=" + (token == null ? "none (" + TOKEN_ENV + " unset)" : "bearer token"));
    System.out.println("listening on " + host + ":" + http.getAddress().getPort());
    System.out.flush();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      http.stop(0);
      try {
        catalog.close();
      } catch (Exception e) {
        // ignore
      }
    }));
  }

  private static String env(String key, String dflt) {
    String v = System.getenv(key);
    return v == null || v.isEmpty() ? dflt : v;
  }

  private static void die(String msg) {
    System.err.println("rest-catalog: " + msg);
    System.exit(2);
  }

  // ------------------------------------------------------------------ request handling

  private void handle(HttpExchange ex) {
    long t0 = System.nanoTime();
    String method = ex.getRequestMethod();
    String path = ex.getRequestURI().getRawPath();
    int code = 500;
    try {
      Result result;
      try (InputStream in = ex.getRequestBody()) {
        byte[] body = in.readAllBytes();
        if (!authorized(ex.getRequestHeaders().getFirst("Authorization"))) {
          ex.getResponseHeaders().set("WWW-Authenticate", "Bearer");
          result = unauthorized();
        } else {
          result = route(method, path, query(ex.getRequestURI().getRawQuery()),
              new String(body, StandardCharsets.UTF_8));
        }
      } catch (Throwable t) {
        result = error(t);
      }
      code = result.code;
      byte[] out = null;
      if (result.body instanceof ErrorResponse) {
        out = ErrorResponseParser.toJson((ErrorResponse) result.body)
            .getBytes(StandardCharsets.UTF_8);
      } else if (result.body instanceof String) {
        out = ((String) result.body).getBytes(StandardCharsets.UTF_8);
      } else if (result.body != null) {
        out = MAPPER.writeValueAsBytes(result.body);
      }
      if (out == null || "HEAD".equals(method) || code == 204) {
        ex.sendResponseHeaders(code, -1);
      } else {
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(code, out.length);
        try (OutputStream os = ex.getResponseBody()) {
          os.write(out);
        }
      }
    } catch (Throwable t) {
      code = -1;
      System.out.println("response failed: " + t);
    } finally {
      ex.close();
      System.out.printf("%s %s %d %.1fms%n", method, path, code, (System.nanoTime() - t0) / 1e6);
    }
  }

  private boolean authorized(String authorization) {
    if (expectedTokenDigest == null) {
      return true;
    }
    if (authorization == null
        || !authorization.regionMatches(true, 0, BEARER, 0, BEARER.length())) {
      return false;
    }
    String presented = authorization.substring(BEARER.length()).trim();
    return MessageDigest.isEqual(expectedTokenDigest, sha256(presented));
  }

  private static byte[] sha256(String text) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e); // every JDK has SHA-256
    }
  }

  private static Result unauthorized() {
    return new Result(401, ErrorResponse.builder().responseCode(401)
        .withType("NotAuthorizedException")
        .withMessage("Missing or invalid bearer token").build());
  }

  private static Map<String, String> query(String raw) {
    Map<String, String> q = new HashMap<>();
    if (raw != null && !raw.isEmpty()) {
      for (String kv : raw.split("&")) {
        int eq = kv.indexOf('=');
        String k = eq < 0 ? kv : kv.substring(0, eq);
        String v = eq < 0 ? "" : kv.substring(eq + 1);
        q.put(URLDecoder.decode(k, StandardCharsets.UTF_8), URLDecoder.decode(v, StandardCharsets.UTF_8));
      }
    }
    return q;
  }

  private static <T> T parse(String body, Class<T> cls) throws JsonProcessingException {
    return MAPPER.readValue(body, cls);
  }

  private Result route(String method, String path, Map<String, String> q, String body)
      throws Exception {
    if (path.equals("/healthz")) {
      return new Result(200, "{\"status\":\"ok\"}");
    }
    if (!path.startsWith("/v1/")) {
      return notFound(method, path);
    }
    List<String> s = new ArrayList<>(Arrays.asList(path.substring(4).split("/")));
    if (s.size() > 1 && !ROOTS.contains(s.get(0))) {
      s.remove(0); // a {prefix}; this server has a single catalog
    }
    int n = s.size();
    String root = s.get(0);
    if (root.equals("config") && n == 1 && method.equals("GET")) {
      return ok(CONFIG_JSON);
    }
    if (root.equals("tables") && n == 2 && s.get(1).equals("rename") && method.equals("POST")) {
      CatalogHandlers.renameTable(catalog, parse(body, RenameTableRequest.class));
      return NO_CONTENT;
    }
    if (root.equals("views") && n == 2 && s.get(1).equals("rename") && method.equals("POST")) {
      CatalogHandlers.renameView(catalog, parse(body, RenameTableRequest.class));
      return NO_CONTENT;
    }
    if (root.equals("transactions") && n == 2 && s.get(1).equals("commit")
        && method.equals("POST")) {
      CommitTransactionRequest req = parse(body, CommitTransactionRequest.class);
      req.validate();
      IcebenchBridge.commitTransaction(catalog, req);
      return NO_CONTENT;
    }
    if (!root.equals("namespaces")) {
      return notFound(method, path);
    }
    if (n == 1) {
      if (method.equals("GET")) {
        Namespace parent = q.containsKey("parent") ? RESTUtil.decodeNamespace(
            RESTUtil.encodeString(q.get("parent"))) : Namespace.empty();
        if (q.containsKey("pageToken") || q.containsKey("pageSize")) {
          return ok(CatalogHandlers.listNamespaces(catalog, parent, q.get("pageToken"),
              q.get("pageSize")));
        }
        return ok(CatalogHandlers.listNamespaces(catalog, parent));
      } else if (method.equals("POST")) {
        return ok(CatalogHandlers.createNamespace(catalog, parse(body, CreateNamespaceRequest.class)));
      }
      return notFound(method, path);
    }
    Namespace ns = RESTUtil.decodeNamespace(s.get(1));
    if (n == 2) {
      switch (method) {
        case "GET": return ok(CatalogHandlers.loadNamespace(catalog, ns));
        case "HEAD": CatalogHandlers.namespaceExists(catalog, ns); return NO_CONTENT;
        case "DELETE": CatalogHandlers.dropNamespace(catalog, ns); return NO_CONTENT;
        default: return notFound(method, path);
      }
    }
    String kind = s.get(2);
    if (n == 3) {
      if (kind.equals("properties") && method.equals("POST")) {
        return ok(CatalogHandlers.updateNamespaceProperties(catalog, ns,
            parse(body, UpdateNamespacePropertiesRequest.class)));
      }
      if (kind.equals("register") && method.equals("POST")) {
        return ok(CatalogHandlers.registerTable(catalog, ns, parse(body, RegisterTableRequest.class)));
      }
      boolean paged = q.containsKey("pageToken") || q.containsKey("pageSize");
      if (kind.equals("tables")) {
        if (method.equals("GET")) {
          return ok(paged ? CatalogHandlers.listTables(catalog, ns, q.get("pageToken"),
              q.get("pageSize")) : CatalogHandlers.listTables(catalog, ns));
        } else if (method.equals("POST")) {
          CreateTableRequest req = parse(body, CreateTableRequest.class);
          return ok(req.stageCreate() ? CatalogHandlers.stageTableCreate(catalog, ns, req)
              : CatalogHandlers.createTable(catalog, ns, req));
        }
      }
      if (kind.equals("views")) {
        if (method.equals("GET")) {
          return ok(paged ? CatalogHandlers.listViews(catalog, ns, q.get("pageToken"),
              q.get("pageSize")) : CatalogHandlers.listViews(catalog, ns));
        } else if (method.equals("POST")) {
          return ok(CatalogHandlers.createView(catalog, ns, parse(body, CreateViewRequest.class)));
        }
      }
      return notFound(method, path);
    }
    TableIdentifier ident = TableIdentifier.of(ns, RESTUtil.decodeString(s.get(3)));
    if (n == 4 && kind.equals("tables")) {
      switch (method) {
        case "GET": return ok(CatalogHandlers.loadTable(catalog, ident));
        case "HEAD": CatalogHandlers.tableExists(catalog, ident); return NO_CONTENT;
        case "POST":
          return ok(CatalogHandlers.updateTable(catalog, ident, parse(body, UpdateTableRequest.class)));
        case "DELETE":
          if (Boolean.parseBoolean(q.getOrDefault("purgeRequested", "false"))) {
            CatalogHandlers.purgeTable(catalog, ident);
          } else {
            CatalogHandlers.dropTable(catalog, ident);
          }
          return NO_CONTENT;
        default: return notFound(method, path);
      }
    }
    if (n == 4 && kind.equals("views")) {
      switch (method) {
        case "GET": return ok(CatalogHandlers.loadView(catalog, ident));
        case "HEAD": CatalogHandlers.viewExists(catalog, ident); return NO_CONTENT;
        case "POST":
          return ok(CatalogHandlers.updateView(catalog, ident, parse(body, UpdateTableRequest.class)));
        case "DELETE": CatalogHandlers.dropView(catalog, ident); return NO_CONTENT;
        default: return notFound(method, path);
      }
    }
    if (n == 5 && kind.equals("tables") && s.get(4).equals("metrics") && method.equals("POST")) {
      return NO_CONTENT; // metrics reports are accepted and dropped
    }
    return notFound(method, path);
  }

  private static Result notFound(String method, String path) {
    return new Result(404, ErrorResponse.builder().responseCode(404)
        .withType("NotFoundException").withMessage("No route for " + method + " " + path).build());
  }

  private static Result error(Throwable t) {
    // CatalogHandlers wraps requirement failures in its private ValidationFailureException
    if (t.getClass().getSimpleName().equals("ValidationFailureException") && t.getCause() != null) {
      t = t.getCause();
    }
    int code;
    if (t instanceof NoSuchNamespaceException || t instanceof NoSuchTableException
        || t instanceof NoSuchViewException || t instanceof NotFoundException) {
      code = 404;
    } else if (t instanceof AlreadyExistsException || t instanceof CommitFailedException
        || t instanceof NamespaceNotEmptyException) {
      code = 409;
    } else if (t instanceof ValidationException || t instanceof IllegalArgumentException
        || t instanceof JsonProcessingException) {
      code = 400;
    } else if (t instanceof NotAuthorizedException) {
      code = 401;
    } else if (t instanceof ForbiddenException) {
      code = 403;
    } else if (t instanceof UnsupportedOperationException) {
      code = 406;
    } else if (t instanceof UnprocessableEntityException) {
      code = 422;
    } else if (t instanceof ServiceUnavailableException) {
      code = 503;
    } else if (t instanceof CommitStateUnknownException) {
      code = 500;
    } else {
      code = 500;
    }
    if (code == 500) {
      t.printStackTrace(System.out);
    }
    String msg = t.getMessage() == null ? t.toString() : t.getMessage();
    return new Result(code, ErrorResponse.builder().responseCode(code)
        .withType(t.getClass().getSimpleName()).withMessage(msg).build());
  }
}
