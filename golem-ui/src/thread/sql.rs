//! The thread table both SQL stores share: one row per thread in `golem_threads`, a lease
//! taken by one conditional `UPDATE`, lease times read from the database's clock.
//!
//! The statements are the same for SQLite and Postgres (both read `$1`-style parameters and
//! `RETURNING`) except for the expression of the clock, so the stores differ only in how
//! they connect and create the table.

use std::fmt;
use std::time::Duration;

use golem::RunState;
use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool, Row, Type};

use super::{Lease, ThreadError};

/// The table, created when missing. `state` is the thread's `RunState` as JSON text (`NULL`
/// before its first run); `lease` is the token of the request that holds the thread
/// (`NULL` when free), valid until `lease_until`; times are milliseconds since the Unix
/// epoch on the database's clock.
pub(super) const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS golem_threads (
    id TEXT PRIMARY KEY,
    state TEXT,
    lease TEXT,
    lease_until BIGINT,
    updated_at BIGINT NOT NULL
)";

/// How long a lease holds when it is never given back, unless set otherwise.
const DEFAULT_LEASE: Duration = Duration::from_secs(600);

/// The statements of one database, built around its expression for "now, in milliseconds
/// since the Unix epoch".
#[derive(Debug)]
pub(super) struct Statements {
    create: String,
    take: String,
    save: String,
}

impl Statements {
    /// The statements for a database whose clock reads as the SQL expression `now_ms`.
    pub(super) fn new(now_ms: &str) -> Self {
        Statements {
            create: format!(
                "INSERT INTO golem_threads (id, updated_at) VALUES ($1, {now_ms})
                 ON CONFLICT (id) DO NOTHING"
            ),
            // The condition and the write are one statement: of two requests, the second
            // finds the lease set (Postgres re-reads the row once the first commits) and
            // takes nothing.
            take: format!(
                "UPDATE golem_threads SET lease = $1, lease_until = {now_ms} + $2
                 WHERE id = $3 AND (lease IS NULL OR lease_until < {now_ms}) RETURNING state"
            ),
            save: format!(
                "UPDATE golem_threads
                 SET state = $1, lease = NULL, lease_until = NULL, updated_at = {now_ms}
                 WHERE id = $2 AND lease = $3 RETURNING id"
            ),
        }
    }
}

const EXISTS: &str = "SELECT id FROM golem_threads WHERE id = $1";
const RELEASE: &str =
    "UPDATE golem_threads SET lease = NULL, lease_until = NULL WHERE id = $1 AND lease = $2";
const LOAD: &str = "SELECT state FROM golem_threads WHERE id = $1";

/// The threads of one database: the [`ThreadStore`](super::ThreadStore) methods of both SQL
/// stores.
pub(super) struct SqlThreads<DB: Database> {
    pool: Pool<DB>,
    lease: Duration,
    sql: &'static Statements,
}

impl<DB: Database> Clone for SqlThreads<DB> {
    fn clone(&self) -> Self {
        SqlThreads {
            pool: self.pool.clone(),
            lease: self.lease,
            sql: self.sql,
        }
    }
}

impl<DB: Database> fmt::Debug for SqlThreads<DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqlThreads")
            .field("pool", &self.pool)
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

impl<DB> SqlThreads<DB>
where
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> String: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'r> Option<String>: Decode<'r, DB>,
    usize: ColumnIndex<DB::Row>,
{
    /// The threads in `pool`'s database, whose table exists, under `sql`.
    pub(super) fn new(pool: Pool<DB>, sql: &'static Statements) -> Self {
        SqlThreads {
            pool,
            lease: DEFAULT_LEASE,
            sql,
        }
    }

    pub(super) fn set_lease_time(&mut self, lease: Duration) {
        self.lease = lease;
    }

    pub(super) async fn lock(&self, thread_id: &str, create: bool) -> Result<Lease, ThreadError> {
        if create {
            sqlx::query(&self.sql.create)
                .bind(thread_id)
                .execute(&self.pool)
                .await
                .map_err(backend)?;
        }
        let token = token();
        let lease_ms = i64::try_from(self.lease.as_millis()).unwrap_or(i64::MAX / 2);
        let taken = sqlx::query(&self.sql.take)
            .bind(token.as_str())
            .bind(lease_ms)
            .bind(thread_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(backend)?;
        let Some(row) = taken else {
            let exists = sqlx::query(EXISTS)
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
        let state: Option<String> = row.try_get(0).map_err(backend)?;
        let state = match state.as_deref().map(parse(thread_id)).transpose() {
            Ok(state) => state,
            Err(error) => {
                self.release(Lease::new(thread_id, token, None)).await?;
                return Err(error);
            }
        };
        Ok(Lease::new(thread_id, token, state))
    }

    pub(super) async fn save(&self, lease: Lease, state: &RunState) -> Result<(), ThreadError> {
        let json = serde_json::to_string(state).map_err(backend)?;
        let saved = sqlx::query(&self.sql.save)
            .bind(json)
            .bind(lease.thread_id())
            .bind(lease.token())
            .fetch_optional(&self.pool)
            .await
            .map_err(backend)?;
        if saved.is_none() {
            return Err(ThreadError::LeaseLost {
                thread_id: lease.thread_id().to_owned(),
            });
        }
        Ok(())
    }

    pub(super) async fn release(&self, lease: Lease) -> Result<(), ThreadError> {
        sqlx::query(RELEASE)
            .bind(lease.thread_id())
            .bind(lease.token())
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        Ok(())
    }

    pub(super) async fn load(&self, thread_id: &str) -> Result<Option<RunState>, ThreadError> {
        let row = sqlx::query(LOAD)
            .bind(thread_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(backend)?;
        let Some(row) = row else {
            return Err(ThreadError::NotFound {
                thread_id: thread_id.to_owned(),
            });
        };
        let state: Option<String> = row.try_get(0).map_err(backend)?;
        state.as_deref().map(parse(thread_id)).transpose()
    }
}

/// The [`ThreadStore`](super::ThreadStore) impl of a SQL store, forwarded to its `threads`
/// field, and its `lease_time` setting.
macro_rules! sql_thread_store {
    ($store:ty) => {
        impl $store {
            /// How long a lease holds when it is never given back (a crashed process); ten
            /// minutes unless set. A run that takes longer loses its thread to the next
            /// request, and its save fails with
            /// [`ThreadError::LeaseLost`]($crate::thread::ThreadError::LeaseLost).
            #[must_use]
            pub fn lease_time(mut self, lease: ::std::time::Duration) -> Self {
                self.threads.set_lease_time(lease);
                self
            }
        }

        impl $crate::thread::ThreadStore for $store {
            async fn lock(
                &self,
                thread_id: &str,
                create: bool,
            ) -> Result<$crate::thread::Lease, $crate::thread::ThreadError> {
                self.threads.lock(thread_id, create).await
            }

            async fn save(
                &self,
                lease: $crate::thread::Lease,
                state: &::golem::RunState,
            ) -> Result<(), $crate::thread::ThreadError> {
                self.threads.save(lease, state).await
            }

            async fn release(
                &self,
                lease: $crate::thread::Lease,
            ) -> Result<(), $crate::thread::ThreadError> {
                self.threads.release(lease).await
            }

            async fn load(
                &self,
                thread_id: &str,
            ) -> Result<Option<::golem::RunState>, $crate::thread::ThreadError> {
                self.threads.load(thread_id).await
            }
        }
    };
}
pub(super) use sql_thread_store;

fn parse(thread_id: &str) -> impl Fn(&str) -> Result<RunState, ThreadError> + '_ {
    move |json| {
        serde_json::from_str(json).map_err(|source| ThreadError::Corrupt {
            thread_id: thread_id.to_owned(),
            source,
        })
    }
}

pub(super) fn backend(error: impl std::error::Error + Send + Sync + 'static) -> ThreadError {
    ThreadError::Backend(Box::new(error))
}

/// A lease token no other request guesses.
fn token() -> String {
    format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}
