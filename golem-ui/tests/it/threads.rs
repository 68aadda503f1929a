//! The thread stores on real databases — `SqliteThreadStore` on a database file,
//! `PostgresThreadStore` on a throwaway Postgres server — through the same tests: threads
//! that survive, one writer at a time, unknown threads, expired leases, unreadable states.
//! And Postgres across processes: stores on separate pools race for one thread.
#![cfg(any(feature = "sqlite", feature = "postgres"))]

#[cfg(feature = "postgres")]
use crate::postgres;

use std::time::Duration;

use golem::RunState;
use golem::model::ModelResponse;
use golem_ui::thread::{ThreadError, ThreadStore};

/// A database that holds threads, new for each test.
trait Database: Sized {
    type Store: ThreadStore + Clone;

    /// A new, empty database.
    async fn create() -> Self;

    /// A store on the database, on a pool of its own (a server process).
    async fn open(&self) -> Self::Store;

    /// `store` with leases of `lease`.
    fn lease_time(store: Self::Store, lease: Duration) -> Self::Store;

    /// Runs `sql` on the database, beside the stores.
    async fn execute(&self, sql: &str);
}

/// Runs each generic test body on each store the build has.
macro_rules! on_each_store {
    ($($test:ident),* $(,)?) => {
        #[cfg(feature = "sqlite")]
        mod sqlite {
            $(
                #[tokio::test]
                async fn $test() {
                    super::$test::<super::SqliteFile>().await;
                }
            )*
        }

        #[cfg(feature = "postgres")]
        mod postgres_server {
            $(
                #[tokio::test]
                async fn $test() {
                    super::$test::<super::PostgresDatabase>().await;
                }
            )*
        }
    };
}

on_each_store!(
    a_saved_thread_survives_the_store,
    an_unknown_thread_is_not_found,
    a_second_request_on_a_thread_is_busy_and_writes_nothing,
    an_expired_lease_is_taken_over_and_its_save_refused,
    an_unreadable_state_is_corrupt_and_leaves_the_thread_free,
);

fn a_state() -> RunState {
    let mut state = RunState::from_history(vec![ModelResponse::text("Hi!").into()]);
    state.push_prompt("How are you?");
    state
}

async fn a_saved_thread_survives_the_store<D: Database>() {
    let database = D::create().await;
    let store = database.open().await;
    let lease = store.lock("t1", true).await.expect("a new thread");
    assert_eq!(lease.thread_id(), "t1");
    assert_eq!(lease.state(), None);
    store.save(lease, &a_state()).await.expect("saved");
    drop(store);

    let reopened = database.open().await;
    assert_eq!(
        reopened.load("t1").await.expect("t1 exists"),
        Some(a_state())
    );
    let mut lease = reopened.lock("t1", false).await.expect("t1 is free");
    assert_eq!(lease.take_state(), Some(a_state()));
    reopened.release(lease).await.expect("released");
    assert_eq!(
        reopened.load("t1").await.expect("t1 exists"),
        Some(a_state())
    );
}

async fn an_unknown_thread_is_not_found<D: Database>() {
    let database = D::create().await;
    let store = database.open().await;
    let error = store.lock("nope", false).await.expect_err("no thread");
    assert!(error.is_not_found(), "{error:?}");
    assert_eq!(error.to_string(), "no thread `nope`");
    assert!(
        store
            .load("nope")
            .await
            .expect_err("no thread")
            .is_not_found()
    );
}

async fn a_second_request_on_a_thread_is_busy_and_writes_nothing<D: Database>() {
    let database = D::create().await;
    let store = database.open().await;
    let first = store.lock("t1", true).await.expect("a new thread");
    store.save(first, &a_state()).await.expect("saved");

    // Two requests at once, from two tasks: exactly one takes the thread.
    let (a, b) = tokio::join!(
        tokio::spawn({
            let store = store.clone();
            async move { store.lock("t1", false).await }
        }),
        tokio::spawn({
            let store = store.clone();
            async move { store.lock("t1", false).await }
        }),
    );
    let (a, b) = (a.expect("the task ends"), b.expect("the task ends"));
    let (lease, busy) = match (a, b) {
        (Ok(lease), Err(busy)) | (Err(busy), Ok(lease)) => (lease, busy),
        other => panic!("exactly one request should take the thread: {other:?}"),
    };
    assert!(matches!(&busy, ThreadError::Busy { thread_id } if thread_id == "t1"));
    assert_eq!(busy.to_string(), "thread `t1` is busy with another request");
    assert_eq!(store.load("t1").await.expect("t1 exists"), Some(a_state()));

    let mut next = a_state();
    next.push_prompt("And now?");
    store.save(lease, &next).await.expect("the holder saves");
    assert_eq!(store.load("t1").await.expect("t1 exists"), Some(next));
    let again = store.lock("t1", false).await.expect("free again");
    store.release(again).await.expect("released");
}

async fn an_expired_lease_is_taken_over_and_its_save_refused<D: Database>() {
    let database = D::create().await;
    let store = D::lease_time(database.open().await, Duration::ZERO);
    let stale = store.lock("t1", true).await.expect("a new thread");
    // Let the database's clock pass the lease's end (a lease of zero ends at once).
    tokio::time::sleep(Duration::from_millis(5)).await;
    let fresh = store
        .lock("t1", false)
        .await
        .expect("the stale lease expired");
    let error = store
        .save(stale, &a_state())
        .await
        .expect_err("the lease was lost");
    assert!(matches!(&error, ThreadError::LeaseLost { thread_id } if thread_id == "t1"));
    assert!(error.is_busy());
    assert_eq!(store.load("t1").await.expect("t1 exists"), None);
    store
        .save(fresh, &a_state())
        .await
        .expect("the holder saves");
    assert_eq!(store.load("t1").await.expect("t1 exists"), Some(a_state()));
}

async fn an_unreadable_state_is_corrupt_and_leaves_the_thread_free<D: Database>() {
    let database = D::create().await;
    let store = database.open().await;
    let lease = store.lock("t1", true).await.expect("a new thread");
    store.save(lease, &a_state()).await.expect("saved");
    database
        .execute(
            r#"UPDATE golem_threads SET state = replace(state, '"version":2', '"version":99')"#,
        )
        .await;
    for _ in 0..2 {
        let error = store.lock("t1", false).await.expect_err("corrupt");
        assert!(matches!(&error, ThreadError::Corrupt { thread_id, .. } if thread_id == "t1"));
        assert_eq!(
            std::error::Error::source(&error).map(ToString::to_string),
            Some("run state version 99 is not supported; this golem reads versions 1 to 2".into())
        );
    }
}

/// A SQLite database file in a temp dir.
#[cfg(feature = "sqlite")]
struct SqliteFile {
    dir: tempfile::TempDir,
}

#[cfg(feature = "sqlite")]
impl SqliteFile {
    fn path(&self) -> std::path::PathBuf {
        self.dir.path().join("threads.db")
    }
}

#[cfg(feature = "sqlite")]
impl Database for SqliteFile {
    type Store = golem_ui::thread::SqliteThreadStore;

    async fn create() -> Self {
        SqliteFile {
            dir: tempfile::tempdir().expect("a temp dir"),
        }
    }

    async fn open(&self) -> Self::Store {
        Self::Store::open(self.path())
            .await
            .expect("the store opens")
    }

    fn lease_time(store: Self::Store, lease: Duration) -> Self::Store {
        store.lease_time(lease)
    }

    async fn execute(&self, sql: &str) {
        let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", self.path().display()))
            .await
            .expect("the file opens");
        sqlx::query(sql).execute(&pool).await.expect("executed");
    }
}

/// A database of its own on the test process's Postgres server.
#[cfg(feature = "postgres")]
struct PostgresDatabase {
    url: String,
}

#[cfg(feature = "postgres")]
impl Database for PostgresDatabase {
    type Store = golem_ui::thread::PostgresThreadStore;

    async fn create() -> Self {
        PostgresDatabase {
            url: postgres::database().await,
        }
    }

    async fn open(&self) -> Self::Store {
        Self::Store::connect(&self.url)
            .await
            .expect("the store connects")
    }

    fn lease_time(store: Self::Store, lease: Duration) -> Self::Store {
        store.lease_time(lease)
    }

    async fn execute(&self, sql: &str) {
        let pool = sqlx::PgPool::connect(&self.url)
            .await
            .expect("the database answers");
        sqlx::query(sql).execute(&pool).await.expect("executed");
    }
}

/// Server processes behind a load balancer, each with its own pool on one database, race
/// for new and existing threads: in every round exactly one request holds the thread, every
/// other gets `Busy`, and only the holder's save lands.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stores_on_separate_pools_give_a_thread_to_exactly_one_request() {
    use std::sync::Arc;

    use tokio::sync::Barrier;

    const PROCESSES: usize = 2;
    const REQUESTS_EACH: usize = 4;
    const ROUNDS: usize = 10;

    let database = PostgresDatabase::create().await;
    // The processes start together: each creates the table when it is missing.
    let stores = futures_util::future::join_all((0..PROCESSES).map(|_| database.open())).await;
    for round in 0..ROUNDS {
        // Even rounds race to create a new thread, odd ones to take the existing one.
        let thread = format!("t{}", round / 2);
        let create = round % 2 == 0;
        let barrier = Arc::new(Barrier::new(PROCESSES * REQUESTS_EACH));
        let mut requests = Vec::new();
        for (process, store) in stores.iter().enumerate() {
            for _ in 0..REQUESTS_EACH {
                let (store, barrier, thread) = (store.clone(), barrier.clone(), thread.clone());
                requests.push(tokio::spawn(async move {
                    barrier.wait().await;
                    (process, store.lock(&thread, create).await)
                }));
            }
        }
        let mut holders = Vec::new();
        for request in requests {
            match request.await.expect("the task ends") {
                (process, Ok(lease)) => holders.push((process, lease)),
                (_, Err(ThreadError::Busy { thread_id })) => assert_eq!(thread_id, thread),
                (_, Err(error)) => panic!("round {round}: {error:?}"),
            }
        }
        assert_eq!(holders.len(), 1, "round {round}: {holders:?}");
        let (process, lease) = holders.pop().expect("one holder");
        let other = &stores[(process + 1) % PROCESSES];
        let before = other.load(&thread).await.expect("the thread exists");
        assert_eq!(before.is_some(), !create, "round {round}");

        let mut state = before.unwrap_or_else(a_state);
        state.push_prompt(format!("round {round}, process {process}"));
        stores[process]
            .save(lease, &state)
            .await
            .expect("the holder saves");
        assert_eq!(other.load(&thread).await.expect("saved"), Some(state));
    }
}
