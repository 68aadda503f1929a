//! [`SqliteThreadStore`]: threads in an embedded SQLite database file.

use std::path::Path;
use std::str::FromStr;
use std::sync::LazyLock;

use sqlx::Sqlite;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

use super::ThreadError;
use super::sql::{self, CREATE_TABLE, SqlThreads, Statements, backend};

/// A [`ThreadStore`](super::ThreadStore) in a SQLite database file (through sqlx), for a
/// server in one process. The table `golem_threads` is created when missing (its schema is
/// in the [web guide](crate::guide)).
///
/// ```
/// use golem::RunState;
/// use golem_ui::thread::{SqliteThreadStore, ThreadStore};
///
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let dir = std::env::temp_dir().join(format!("golem-ui-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let store = SqliteThreadStore::open(dir.join("threads.db")).await?;
/// let lease = store.lock("t1", true).await?;
/// assert!(lease.state().is_none());
/// assert!(store.lock("t1", true).await.unwrap_err().is_busy());
/// store.save(lease, &RunState::from_history(Vec::new())).await?;
/// assert!(store.load("t1").await?.is_some());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct SqliteThreadStore {
    threads: SqlThreads<Sqlite>,
}

impl SqliteThreadStore {
    /// Opens (or creates) the database file at `path`, in WAL mode, and creates the table.
    ///
    /// # Errors
    /// [`ThreadError::Backend`] when the file cannot be opened or the table created.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, ThreadError> {
        let options = SqliteConnectOptions::from_str("sqlite://")
            .map_err(backend)?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal);
        let pool = SqlitePoolOptions::new()
            .connect_with(options)
            .await
            .map_err(backend)?;
        Self::with_pool(pool).await
    }

    /// A store on an open pool; creates the table when missing.
    ///
    /// # Errors
    /// [`ThreadError::Backend`] when the table cannot be created.
    pub async fn with_pool(pool: SqlitePool) -> Result<Self, ThreadError> {
        sqlx::query(CREATE_TABLE)
            .execute(&pool)
            .await
            .map_err(backend)?;
        Ok(SqliteThreadStore {
            threads: SqlThreads::new(pool, &STATEMENTS),
        })
    }
}

sql::sql_thread_store!(SqliteThreadStore);

/// SQLite's clock in milliseconds since the Unix epoch (`julianday` counts days since noon,
/// 4714 BC, with milliseconds).
const NOW_MS: &str = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";

static STATEMENTS: LazyLock<Statements> = LazyLock::new(|| Statements::new(NOW_MS));
