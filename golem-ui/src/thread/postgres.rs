//! [`PostgresThreadStore`]: threads in a Postgres database that several server processes
//! share.

use std::sync::LazyLock;

use sqlx::Postgres;
use sqlx::postgres::{PgPool, PgPoolOptions};

use super::ThreadError;
use super::sql::{self, CREATE_TABLE, SqlThreads, Statements, backend};

/// A [`ThreadStore`](super::ThreadStore) in a Postgres database (through sqlx), for several
/// server processes behind a load balancer. The table `golem_threads` is created when
/// missing (its schema is in the [web guide](crate::guide)).
///
/// Every process that shares the database sees the same threads, and the database decides
/// which request holds a thread: a lease is taken by one conditional `UPDATE`, which
/// Postgres runs under the row's lock, so of two requests on one thread, from any two
/// processes, exactly one gets it and the other gets [`ThreadError::Busy`]. Lease times are
/// read from the database's clock, so servers whose clocks differ agree on when a lease
/// ends.
///
/// ```no_run
/// use golem::RunState;
/// use golem_ui::thread::{PostgresThreadStore, ThreadStore};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let store = PostgresThreadStore::connect("postgres://golem@db.internal/chat").await?;
/// let lease = store.lock("t1", true).await?;
/// assert!(store.lock("t1", true).await.unwrap_err().is_busy());
/// store.save(lease, &RunState::from_history(Vec::new())).await?;
/// assert!(store.load("t1").await?.is_some());
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct PostgresThreadStore {
    threads: SqlThreads<Postgres>,
}

/// The key of the advisory lock under which a store creates the table, so that processes
/// starting together do not race on `CREATE TABLE IF NOT EXISTS` (which Postgres does not
/// make atomic: the loser fails on a catalog's unique index).
const CREATE_LOCK: i64 = 0x676f_6c65_6d5f_7468; // "golem_th"

impl PostgresThreadStore {
    /// Connects a pool to the database at `url` (`postgres://user:password@host/database`,
    /// as sqlx reads it) and creates the table when missing.
    ///
    /// # Errors
    /// [`ThreadError::Backend`] when the database cannot be reached or the table created.
    pub async fn connect(url: &str) -> Result<Self, ThreadError> {
        let pool = PgPoolOptions::new().connect(url).await.map_err(backend)?;
        Self::with_pool(pool).await
    }

    /// A store on an open pool; creates the table when missing.
    ///
    /// # Errors
    /// [`ThreadError::Backend`] when the table cannot be created.
    pub async fn with_pool(pool: PgPool) -> Result<Self, ThreadError> {
        let mut transaction = pool.begin().await.map_err(backend)?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(CREATE_LOCK)
            .execute(&mut *transaction)
            .await
            .map_err(backend)?;
        sqlx::query(CREATE_TABLE)
            .execute(&mut *transaction)
            .await
            .map_err(backend)?;
        transaction.commit().await.map_err(backend)?;
        Ok(PostgresThreadStore {
            threads: SqlThreads::new(pool, &STATEMENTS),
        })
    }
}

sql::sql_thread_store!(PostgresThreadStore);

/// The database's clock in milliseconds since the Unix epoch, read once per statement.
const NOW_MS: &str = "(extract(epoch FROM statement_timestamp()) * 1000)::bigint";

static STATEMENTS: LazyLock<Statements> = LazyLock::new(|| Statements::new(NOW_MS));
