//! `SqliteThreadStore` on a real database file: threads that survive, one writer at a time,
//! unknown threads, expired leases, unreadable states.
#![cfg(feature = "sqlite")]

mod common;

use std::time::Duration;

use golem::RunState;
use golem::model::{Message, ModelResponse};
use golem_ui::thread::{SqliteThreadStore, ThreadError, ThreadStore};

fn a_state() -> RunState {
    let mut state = RunState::from_history(vec![Message::Response(ModelResponse::text("Hi!"))]);
    state.push_prompt("How are you?");
    state
}

#[tokio::test]
async fn a_saved_thread_survives_the_store() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("threads.db");
    let store = SqliteThreadStore::open(&path)
        .await
        .expect("the store opens");
    let lease = store.lock("t1", true).await.expect("a new thread");
    assert_eq!(lease.thread_id(), "t1");
    assert_eq!(lease.state(), None);
    store.save(lease, &a_state()).await.expect("saved");
    drop(store);

    let reopened = SqliteThreadStore::open(&path)
        .await
        .expect("the store opens");
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

#[tokio::test]
async fn an_unknown_thread_is_not_found() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = SqliteThreadStore::open(dir.path().join("threads.db"))
        .await
        .expect("the store opens");
    let error = store.lock("nope", false).await.unwrap_err();
    assert!(error.is_not_found(), "{error:?}");
    assert_eq!(error.to_string(), "no thread `nope`");
    assert!(store.load("nope").await.unwrap_err().is_not_found());
}

#[tokio::test]
async fn a_second_request_on_a_thread_is_busy_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = SqliteThreadStore::open(dir.path().join("threads.db"))
        .await
        .expect("the store opens");
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

#[tokio::test]
async fn an_expired_lease_is_taken_over_and_its_save_refused() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = SqliteThreadStore::open(dir.path().join("threads.db"))
        .await
        .expect("the store opens")
        .lease_time(Duration::ZERO);
    let stale = store.lock("t1", true).await.expect("a new thread");
    // Let the clock pass the lease's end (a lease of zero ends at once).
    tokio::time::sleep(Duration::from_millis(5)).await;
    let fresh = store
        .lock("t1", false)
        .await
        .expect("the stale lease expired");
    let error = store.save(stale, &a_state()).await.unwrap_err();
    assert!(matches!(&error, ThreadError::LeaseLost { thread_id } if thread_id == "t1"));
    assert!(error.is_busy());
    assert_eq!(store.load("t1").await.expect("t1 exists"), None);
    store
        .save(fresh, &a_state())
        .await
        .expect("the holder saves");
    assert_eq!(store.load("t1").await.expect("t1 exists"), Some(a_state()));
}

#[tokio::test]
async fn an_unreadable_state_is_corrupt_and_leaves_the_thread_free() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("threads.db");
    let store = SqliteThreadStore::open(&path)
        .await
        .expect("the store opens");
    let lease = store.lock("t1", true).await.expect("a new thread");
    store.save(lease, &a_state()).await.expect("saved");
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .expect("the file opens");
    sqlx::query(
        r#"UPDATE golem_threads SET state = replace(state, '"version":2', '"version":99')"#,
    )
    .execute(&pool)
    .await
    .expect("updated");
    for _ in 0..2 {
        let error = store.lock("t1", false).await.unwrap_err();
        assert!(matches!(&error, ThreadError::Corrupt { thread_id, .. } if thread_id == "t1"));
        assert_eq!(
            std::error::Error::source(&error).map(ToString::to_string),
            Some("run state version 99 is not supported; this golem reads versions 1 to 2".into())
        );
    }
}
