//! The run's catalog from the spec's properties (pyiceberg's names), with the secrets the harness
//! passes in the environment only: the REST catalog's bearer token and the S3 key pair.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use iceberg::io::{S3_ACCESS_KEY_ID, S3_REGION, S3_SECRET_ACCESS_KEY};
use iceberg::{Catalog, CatalogBuilder, TableIdent};
use iceberg_catalog_rest::RestCatalogBuilder;
use iceberg_catalog_sql::{SQL_CATALOG_PROP_BIND_STYLE, SqlBindStyle, SqlCatalogBuilder};
use iceberg_storage_opendal::OpenDalResolvingStorageFactory;

use crate::contract::Failure;

/// pyiceberg's catalog name in the harness (harness.services.stacks.base.CATALOG_NAME): the SQL
/// catalog keys its rows by it, the token variable is named after it.
pub const CATALOG_NAME: &str = "icebench";
const TOKEN_VARIABLE: &str = "PYICEBERG_CATALOG__ICEBENCH__TOKEN";

pub async fn load_catalog(properties: &BTreeMap<String, String>) -> Result<Arc<dyn Catalog>, Failure> {
    let mut props: HashMap<String, String> = properties.clone().into_iter().collect();
    let kind = props.remove("type").unwrap_or_default();
    for (variable, property) in [
        ("AWS_ACCESS_KEY_ID", S3_ACCESS_KEY_ID),
        ("AWS_SECRET_ACCESS_KEY", S3_SECRET_ACCESS_KEY),
        ("AWS_REGION", S3_REGION),
    ] {
        if let Ok(value) = std::env::var(variable) {
            props.entry(property.to_string()).or_insert(value);
        }
    }
    let storage = Arc::new(OpenDalResolvingStorageFactory::default());
    let catalog: Arc<dyn Catalog> = match kind.as_str() {
        "rest" => {
            if let Ok(token) = std::env::var(TOKEN_VARIABLE) {
                props.insert("token".into(), token);
            }
            Arc::new(
                RestCatalogBuilder::default().with_storage_factory(storage).load(CATALOG_NAME, props).await?,
            )
        }
        "sql" => {
            // pyiceberg takes SQLAlchemy's URL (sqlite:////abs/path), sqlx its own (sqlite:///abs/path).
            let uri = props.remove("uri").unwrap_or_default();
            let uri = uri.replacen("sqlite:////", "sqlite:///", 1);
            props.insert("uri".into(), uri);
            props.insert(SQL_CATALOG_PROP_BIND_STYLE.into(), SqlBindStyle::QMark.to_string());
            Arc::new(
                SqlCatalogBuilder::default().with_storage_factory(storage).load(CATALOG_NAME, props).await?,
            )
        }
        other => {
            return Err(Failure::bad_input(format!(
                "catalog type {other:?}: the Rust worker knows rest and sql"
            )));
        }
    };
    Ok(catalog)
}

/// "namespace.table" as the spec names it.
pub fn table_ident(name: &str) -> Result<TableIdent, Failure> {
    let parts: Vec<&str> = name.split('.').collect();
    TableIdent::from_strs(parts).map_err(|e| Failure::bad_input(format!("table name {name:?}: {e}")))
}
