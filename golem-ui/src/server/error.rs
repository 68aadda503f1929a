//! [`ApiError`]: a request the server refuses, as a JSON body and a status.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::thread::ThreadError;
use crate::turn::TurnError;

/// A request the server refuses before it streams anything: the status, a stable code and a
/// message, sent as `{"error": {"code": .., "message": ..}}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, for programs: `malformed`, `too_large`, `empty`, `not_awaited`,
    /// `unanswered`, `unknown_turn`, `not_found`, `busy`, `store`.
    pub code: &'static str,
    /// What went wrong, for people.
    pub message: String,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    pub(crate) fn malformed(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "malformed", message)
    }
}

impl From<TurnError> for ApiError {
    fn from(error: TurnError) -> Self {
        let (status, code) = match &error {
            TurnError::Empty => (StatusCode::BAD_REQUEST, "empty"),
            TurnError::NotAwaited { .. } => (StatusCode::BAD_REQUEST, "not_awaited"),
            TurnError::UnknownTurn => (StatusCode::CONFLICT, "unknown_turn"),
            TurnError::AnswersWithPrompt => (StatusCode::CONFLICT, "answers_with_prompt"),
            _ => (StatusCode::CONFLICT, "unanswered"),
        };
        ApiError::new(status, code, error.to_string())
    }
}

impl From<ThreadError> for ApiError {
    fn from(error: ThreadError) -> Self {
        let (status, code) = if error.is_not_found() {
            (StatusCode::NOT_FOUND, "not_found")
        } else if error.is_busy() {
            (StatusCode::CONFLICT, "busy")
        } else {
            (StatusCode::INTERNAL_SERVER_ERROR, "store")
        };
        ApiError::new(status, code, error.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code, "message": self.message}});
        (self.status, Json(body)).into_response()
    }
}
