//! [`ThreadStore`]: where a server keeps each thread's [`RunState`] between requests.

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(feature = "sqlite")]
mod sqlite;

#[cfg(feature = "postgres")]
pub use postgres::PostgresThreadStore;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteThreadStore;

use std::future::Future;

use golem::{BoxError, RunState};

/// Where a server keeps each conversation's [`RunState`] between requests, keyed by thread
/// id, with one writer per thread at a time.
///
/// A request [`lock`](Self::lock)s its thread and gets a [`Lease`] with the stored state;
/// a second request for the same thread fails with [`ThreadError::Busy`] until the first one
/// [`save`](Self::save)s (which stores the state and releases the thread) or
/// [`release`](Self::release)s it. A lease that is never given back (a crashed process)
/// expires after the store's lease time, so a thread is never locked for good.
///
/// The methods return `Send` futures, so a server can call them from any task. The SQL
/// stores hold each thread in one row and take the lease with one conditional `UPDATE`,
/// so several server processes can share a database.
pub trait ThreadStore: Send + Sync + 'static {
    /// Takes the thread `thread_id` for one request, creating it (with no state) when it
    /// does not exist and `create` is true.
    ///
    /// # Errors
    /// [`ThreadError::NotFound`] for an unknown thread when `create` is false,
    /// [`ThreadError::Busy`] when another request holds it, [`ThreadError::Corrupt`] when its
    /// stored state cannot be read, [`ThreadError::Backend`] when the database fails.
    fn lock(
        &self,
        thread_id: &str,
        create: bool,
    ) -> impl Future<Output = Result<Lease, ThreadError>> + Send;

    /// Stores `state` as the thread's and releases it.
    ///
    /// # Errors
    /// [`ThreadError::LeaseLost`] when the lease expired and another request took the
    /// thread (nothing is written then), [`ThreadError::Backend`] when the database fails.
    fn save(
        &self,
        lease: Lease,
        state: &RunState,
    ) -> impl Future<Output = Result<(), ThreadError>> + Send;

    /// Releases the thread without changing its state.
    ///
    /// # Errors
    /// [`ThreadError::Backend`] when the database fails.
    fn release(&self, lease: Lease) -> impl Future<Output = Result<(), ThreadError>> + Send;

    /// The thread's stored state, read without taking it: `None` for a thread with no run
    /// yet.
    ///
    /// # Errors
    /// [`ThreadError::NotFound`], [`ThreadError::Corrupt`] or [`ThreadError::Backend`].
    fn load(
        &self,
        thread_id: &str,
    ) -> impl Future<Output = Result<Option<RunState>, ThreadError>> + Send;
}

/// One request's hold on a thread, from [`ThreadStore::lock`]: the thread's stored state,
/// and the token that lets only this request save it.
#[derive(Debug)]
pub struct Lease {
    thread_id: String,
    token: String,
    state: Option<RunState>,
}

impl Lease {
    /// A lease on `thread_id` under `token`, with the stored `state`. For implementations of
    /// [`ThreadStore`].
    pub fn new(
        thread_id: impl Into<String>,
        token: impl Into<String>,
        state: Option<RunState>,
    ) -> Self {
        Lease {
            thread_id: thread_id.into(),
            token: token.into(),
            state,
        }
    }

    /// The thread.
    pub fn thread_id(&self) -> &str {
        &self.thread_id
    }

    /// The token the store checks when the lease is saved or released.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The thread's stored state: `None` for a thread with no run yet.
    pub fn state(&self) -> Option<&RunState> {
        self.state.as_ref()
    }

    /// Takes the stored state out, to run with it; the lease still saves or releases.
    pub fn take_state(&mut self) -> Option<RunState> {
        self.state.take()
    }
}

/// A thread store could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ThreadError {
    /// No thread has this id.
    #[error("no thread `{thread_id}`")]
    NotFound {
        /// The id asked for.
        thread_id: String,
    },
    /// Another request holds the thread.
    #[error("thread `{thread_id}` is busy with another request")]
    Busy {
        /// The thread.
        thread_id: String,
    },
    /// The lease expired and another request took the thread; nothing was written.
    #[error("the lease on thread `{thread_id}` expired and another request took it")]
    LeaseLost {
        /// The thread.
        thread_id: String,
    },
    /// The thread's stored state cannot be read.
    #[error("thread `{thread_id}` holds a state that cannot be read")]
    Corrupt {
        /// The thread.
        thread_id: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// The database failed.
    #[error("the thread store failed")]
    Backend(#[source] BoxError),
}

impl ThreadError {
    /// Whether another request holds the thread (an HTTP 409).
    pub fn is_busy(&self) -> bool {
        matches!(
            self,
            ThreadError::Busy { .. } | ThreadError::LeaseLost { .. }
        )
    }

    /// Whether the thread does not exist (an HTTP 404).
    pub fn is_not_found(&self) -> bool {
        matches!(self, ThreadError::NotFound { .. })
    }
}
