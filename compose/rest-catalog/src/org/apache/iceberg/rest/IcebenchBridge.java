package org.apache.iceberg.rest;

import java.util.ArrayList;
import java.util.List;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.BaseTransaction;
import org.apache.iceberg.Table;
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
   * Validates every table change against an in-memory transaction first, then commits them one
   * by one. Like Iceberg's RESTCatalogAdapter: not atomic across tables on a JDBC catalog.
   */
  public static void commitTransaction(Catalog catalog, CommitTransactionRequest request) {
    List<Transaction> txns = new ArrayList<>();
    for (UpdateTableRequest change : request.tableChanges()) {
      Table table = catalog.loadTable(change.identifier());
      if (!(table instanceof BaseTable)) {
        throw new IllegalStateException("Cannot wrap catalog that does not produce BaseTable");
      }
      Transaction txn =
          Transactions.newTransaction(change.identifier().toString(), ((BaseTable) table).operations());
      txns.add(txn);
      BaseTransaction.TransactionTable txTable = (BaseTransaction.TransactionTable) txn.table();
      CatalogHandlers.commit(txTable.operations(), change);
    }
    txns.forEach(Transaction::commitTransaction);
  }
}
