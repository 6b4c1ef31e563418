package org.apache.iceberg.rest;

import java.util.List;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.BaseTransaction;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.Transaction;
import org.apache.iceberg.Transactions;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.rest.requests.CommitTransactionRequest;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper;

/** Access to package-private Iceberg REST helpers (same approach as RESTCatalogAdapter). */
public final class IcebenchBridge {
  private IcebenchBridge() {}

  public static ObjectMapper mapper() {
    return RESTObjectMapper.mapper();
  }

  /**
   * Validates every table change against an in-memory transaction first, then commits each one
   * through CatalogHandlers.commit on the table's own operations, which re-checks the change's
   * requirements and re-applies its updates on every retry. Not atomic across tables on a JDBC
   * catalog (as RESTCatalogAdapter).
   *
   * <p>Iceberg's RESTCatalogAdapter commits the in-memory transactions instead. Their changes are
   * not PendingUpdates, so when the swap loses a race BaseTransaction's retry has nothing to
   * re-apply and commits the refreshed metadata unchanged: a no-op answered with success, and the
   * change is lost (seen with two concurrent DuckDB appends, both answered 204, one landed).
   */
  public static void commitTransaction(Catalog catalog, CommitTransactionRequest request) {
    List<UpdateTableRequest> changes = request.tableChanges();
    TableOperations[] operations = new TableOperations[changes.size()];
    for (int i = 0; i < changes.size(); i++) {
      UpdateTableRequest change = changes.get(i);
      Table table = catalog.loadTable(change.identifier());
      if (!(table instanceof BaseTable)) {
        throw new IllegalStateException("Cannot wrap catalog that does not produce BaseTable");
      }
      operations[i] = ((BaseTable) table).operations();
      Transaction dryRun = Transactions.newTransaction(change.identifier().toString(), operations[i]);
      BaseTransaction.TransactionTable txTable = (BaseTransaction.TransactionTable) dryRun.table();
      CatalogHandlers.commit(txTable.operations(), change); // validates; commits in memory only
    }
    for (int i = 0; i < changes.size(); i++) {
      CatalogHandlers.commit(operations[i], changes.get(i));
    }
  }
}
