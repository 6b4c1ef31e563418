package org.apache.iceberg.rest;

import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.BaseTransaction;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.Transactions;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.apache.iceberg.rest.requests.CommitTransactionRequest;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.servlet.FilterHolder;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

/**
 * Apache Iceberg's REST catalog fixture (RESTServerCatalogAdapter behind RESTCatalogServlet, what
 * apache/iceberg-rest-fixture runs) over a JdbcCatalog and S3FileIO, with three changes: it binds
 * the host it is given (the fixture binds every interface), every request must carry the bearer
 * token from ICEBENCH_REST_TOKEN, and a multi-table transaction commit re-applies each change on a
 * retry (see SafeTransactions). Nothing secret is logged: the fixture logs its properties.
 */
public final class IcebenchRestServer {
  static final String TOKEN_ENV = "ICEBENCH_REST_TOKEN";
  static final String HOST_ENV = "ICEBENCH_REST_HOST";
  static final String PORT_ENV = "ICEBENCH_REST_PORT";

  private IcebenchRestServer() {}

  public static void main(String[] args) throws Exception {
    // The fixture's configuration first (CATALOG_* variables: CATALOG_IO__IMPL -> io-impl), then flags.
    String host = System.getenv().getOrDefault(HOST_ENV, "127.0.0.1");
    int port = Integer.parseInt(System.getenv().getOrDefault(PORT_ENV, "8181"));
    Map<String, String> properties = new HashMap<>();
    properties.put(CatalogProperties.CATALOG_IMPL, JdbcCatalog.class.getName());
    properties.put(CatalogProperties.FILE_IO_IMPL, "org.apache.iceberg.aws.s3.S3FileIO");
    properties.put("jdbc.schema-version", "V1");
    properties.put("jdbc.busy_timeout", "30000"); // SQLite: concurrent commits wait for the lock
    properties.putAll(RCKUtils.environmentCatalogConfig());
    for (int i = 0; i < args.length; i += 2) {
      if (i + 1 >= args.length) {
        die(args[i] + " needs a value");
      }
      String value = args[i + 1];
      switch (args[i]) {
        case "--host" -> host = value;
        case "--port" -> port = Integer.parseInt(value);
        case "--warehouse" -> properties.put(CatalogProperties.WAREHOUSE_LOCATION, value);
        case "--jdbc-uri" -> properties.put(CatalogProperties.URI, value);
        case "--prop" -> {
          int equals = value.indexOf('=');
          if (equals < 1) {
            die("--prop expects key=value, got: " + value);
          }
          properties.put(value.substring(0, equals), value.substring(equals + 1));
        }
        default -> die(
            "unknown option "
                + args[i]
                + " (usage: --host H --port P --warehouse URI --jdbc-uri URI [--prop k=v ...])");
      }
    }
    if (!properties.containsKey(CatalogProperties.WAREHOUSE_LOCATION)
        || !properties.containsKey(CatalogProperties.URI)) {
      die("--warehouse and --jdbc-uri (or CATALOG_WAREHOUSE and CATALOG_URI) are required");
    }
    Catalog catalog = CatalogUtil.buildIcebergCatalog("icebench", properties, null);
    RESTCatalogAdapter adapter =
        new SafeTransactions(new RESTCatalogServer.CatalogContext(catalog, properties));

    ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    context.addServlet(new ServletHolder(new RESTCatalogServlet(adapter)), "/*");
    String token = System.getenv(TOKEN_ENV);
    if (token != null && !token.isEmpty()) {
      context.addFilter(
          new FilterHolder(new BearerToken(token)), "/*", EnumSet.of(DispatcherType.REQUEST));
    }
    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost(host);
    connector.setPort(port);
    server.addConnector(connector);
    server.setHandler(context);
    server.start();
    System.out.printf(
        "Iceberg REST fixture %s listening on %s:%d, warehouse %s, auth=%s%n",
        org.apache.iceberg.IcebergBuild.version(),
        host,
        port,
        properties.get(CatalogProperties.WAREHOUSE_LOCATION),
        token == null || token.isEmpty() ? "none" : "bearer token");
    server.join();
  }

  private static void die(String message) {
    System.err.println("IcebenchRestServer: " + message);
    System.exit(2);
  }

  /**
   * The fixture's adapter with one route replaced. RESTCatalogAdapter commits a transaction's
   * in-memory tables; their changes are not PendingUpdates, so when the swap loses a race the retry
   * has nothing to re-apply and commits the refreshed metadata unchanged: answered with success,
   * the change lost (two concurrent DuckDB appends, both 204, one landed; Iceberg 1.10 and 1.11).
   * Here every change is validated in memory first, then committed through CatalogHandlers.commit
   * on the table's own operations, which re-checks its requirements and re-applies its updates on
   * every retry. Not atomic across tables on a JDBC catalog (nor is the fixture's).
   */
  static final class SafeTransactions extends RESTServerCatalogAdapter {
    private final Catalog catalog;

    SafeTransactions(RESTCatalogServer.CatalogContext context) {
      super(context);
      this.catalog = context.catalog();
    }

    @Override
    public <T extends RESTResponse> T handleRequest(
        Route route,
        Map<String, String> vars,
        HTTPRequest request,
        Class<T> responseType,
        Consumer<Map<String, String>> responseHeaders) {
      if (route != Route.COMMIT_TRANSACTION) {
        return super.handleRequest(route, vars, request, responseType, responseHeaders);
      }
      List<UpdateTableRequest> changes =
          castRequest(CommitTransactionRequest.class, request.body()).tableChanges();
      TableOperations[] operations = new TableOperations[changes.size()];
      for (int i = 0; i < changes.size(); i++) {
        UpdateTableRequest change = changes.get(i);
        Table table = catalog.loadTable(change.identifier());
        if (!(table instanceof BaseTable base)) {
          throw new IllegalStateException("Cannot wrap catalog that does not produce BaseTable");
        }
        operations[i] = base.operations();
        Transaction dryRun =
            Transactions.newTransaction(change.identifier().toString(), operations[i]);
        // Validates and applies in memory only; the loop below commits.
        CatalogHandlers.commit(
            ((BaseTransaction.TransactionTable) dryRun.table()).operations(), change);
      }
      for (int i = 0; i < changes.size(); i++) {
        CatalogHandlers.commit(operations[i], changes.get(i));
      }
      return null;
    }
  }

  /**
   * 401 for a request without `Authorization: Bearer <token>` (the scheme in any case, RFC 6750);
   * the tokens' digests compared in constant time.
   */
  static final class BearerToken implements Filter {
    private static final String SCHEME = "Bearer ";
    private final byte[] expected;

    BearerToken(String token) {
      this.expected = sha256(token);
    }

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
        throws IOException, ServletException {
      String given = ((HttpServletRequest) request).getHeader("Authorization");
      if (given != null
          && given.regionMatches(true, 0, SCHEME, 0, SCHEME.length())
          && MessageDigest.isEqual(expected, sha256(given.substring(SCHEME.length())))) {
        chain.doFilter(request, response);
        return;
      }
      HttpServletResponse http = (HttpServletResponse) response;
      http.setStatus(401);
      http.setContentType("application/json");
      http.getWriter()
          .write(
              "{\"error\":{\"message\":\"missing or wrong bearer token\","
                  + "\"type\":\"NotAuthorizedException\",\"code\":401}}");
    }

    private static byte[] sha256(String text) {
      try {
        return MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
      } catch (java.security.NoSuchAlgorithmException e) {
        throw new IllegalStateException(e);
      }
    }
  }
}
