//! [`SqliteThreadStore`]: threads in an embedded SQLite database file.

use std::path::Path;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use golem::RunState;
use sqlx::Row;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

use super::{Lease, ThreadError, ThreadStore};

/// How long a lease holds when it is never given back, unless set otherwise.
const DEFAULT_LEASE: Duration = Duration::from_secs(600);

/// A [`ThreadStore`] in a SQLite database file (through sqlx), the default for a server in
/// one process. The table `golem_threads` is created when missing.
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
    pool: SqlitePool,
    lease: Duration,
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
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS golem_threads (
                id TEXT PRIMARY KEY,
                state TEXT,
                lease TEXT,
                lease_until INTEGER,
                updated_at INTEGER NOT NULL
            )",
        )
        .execute(&pool)
        .await
        .map_err(backend)?;
        Ok(SqliteThreadStore {
            pool,
            lease: DEFAULT_LEASE,
        })
    }

    /// How long a lease holds when it is never given back (a crashed process); ten minutes
    /// unless set. A run that takes longer loses its thread to the next request, and its
    /// save fails with [`ThreadError::LeaseLost`].
    #[must_use]
    pub fn lease_time(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }
}

impl ThreadStore for SqliteThreadStore {
    async fn lock(&self, thread_id: &str, create: bool) -> Result<Lease, ThreadError> {
        let now = now_ms();
        if create {
            sqlx::query(
                "INSERT INTO golem_threads (id, updated_at) VALUES (?, ?) ON CONFLICT(id) DO NOTHING",
            )
            .bind(thread_id)
            .bind(now)
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        }
        let token = token();
        let until = now.saturating_add(i64::try_from(self.lease.as_millis()).unwrap_or(i64::MAX));
        let taken = sqlx::query(
            "UPDATE golem_threads SET lease = ?, lease_until = ?
             WHERE id = ? AND (lease IS NULL OR lease_until < ?) RETURNING state",
        )
        .bind(&token)
        .bind(until)
        .bind(thread_id)
        .bind(now)
        .fetch_optional(&self.pool)
        .await
        .map_err(backend)?;
        let Some(row) = taken else {
            let exists = sqlx::query("SELECT 1 FROM golem_threads WHERE id = ?")
                .bind(thread_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(backend)?;
            let thread_id = thread_id.to_owned();
            return Err(match exists {
                Some(_) => ThreadError::Busy { thread_id },
                None => ThreadError::NotFound { thread_id },
            });
        };
        let state: Option<String> = row.try_get("state").map_err(backend)?;
        let state = match state.as_deref().map(parse(thread_id)).transpose() {
            Ok(state) => state,
            Err(error) => {
                let lease = Lease::new(thread_id, token, None);
                self.release(lease).await?;
                return Err(error);
            }
        };
        Ok(Lease::new(thread_id, token, state))
    }

    async fn save(&self, lease: Lease, state: &RunState) -> Result<(), ThreadError> {
        let json = serde_json::to_string(state).map_err(backend)?;
        let saved = sqlx::query(
            "UPDATE golem_threads SET state = ?, lease = NULL, lease_until = NULL, updated_at = ?
             WHERE id = ? AND lease = ?",
        )
        .bind(json)
        .bind(now_ms())
        .bind(lease.thread_id())
        .bind(lease.token())
        .execute(&self.pool)
        .await
        .map_err(backend)?;
        if saved.rows_affected() == 0 {
            return Err(ThreadError::LeaseLost {
                thread_id: lease.thread_id().to_owned(),
            });
        }
        Ok(())
    }

    async fn release(&self, lease: Lease) -> Result<(), ThreadError> {
        sqlx::query(
            "UPDATE golem_threads SET lease = NULL, lease_until = NULL WHERE id = ? AND lease = ?",
        )
        .bind(lease.thread_id())
        .bind(lease.token())
        .execute(&self.pool)
        .await
        .map_err(backend)?;
        Ok(())
    }

    async fn load(&self, thread_id: &str) -> Result<Option<RunState>, ThreadError> {
        let row = sqlx::query("SELECT state FROM golem_threads WHERE id = ?")
            .bind(thread_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(backend)?;
        let Some(row) = row else {
            return Err(ThreadError::NotFound {
                thread_id: thread_id.to_owned(),
            });
        };
        let state: Option<String> = row.try_get("state").map_err(backend)?;
        state.as_deref().map(parse(thread_id)).transpose()
    }
}

fn parse(thread_id: &str) -> impl Fn(&str) -> Result<RunState, ThreadError> + '_ {
    move |json| {
        serde_json::from_str(json).map_err(|source| ThreadError::Corrupt {
            thread_id: thread_id.to_owned(),
            source,
        })
    }
}

fn backend(error: impl std::error::Error + Send + Sync + 'static) -> ThreadError {
    ThreadError::Backend(Box::new(error))
}

fn now_ms() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

/// A lease token no other request guesses.
fn token() -> String {
    format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}
