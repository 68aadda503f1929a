//! [`Rewind`]: a request that goes back to an earlier turn of its thread, to ask it again
//! (a chat's "regenerate") or with its message edited.

use golem::RunState;
use golem::model::Message;

use crate::turn::TurnError;

/// A request that goes back to a turn of its thread: the thread's history is cut before
/// that turn's request, which is sent again, with its user message replaced by
/// [`prompt`](Self::prompt) when the request edits it.
///
/// The client names the turn by its own messages ([`TurnAt`]); the server finds it in the
/// history it stored, and refuses a turn it cannot find.
///
/// ```
/// use golem::model::{Message, ModelRequest, ModelResponse, RequestPart};
/// use golem::RunState;
/// use golem_ui::{Rewind, TurnAt};
///
/// let mut state = RunState::from_history(vec![
///     Message::Request(ModelRequest::new(vec![RequestPart::user_prompt("Hi")])),
///     Message::from(ModelResponse::text("Hello!")),
///     Message::Request(ModelRequest::new(vec![RequestPart::user_prompt("A joke?")])),
///     Message::from(ModelResponse::text("No.")),
/// ]);
/// // The user's second message, edited.
/// let edit = Rewind::edit(TurnAt::Prompt { after: Some(0), nth: 0 }, "A pun?");
/// assert_eq!(edit.apply(&mut state), Ok(2));
/// assert_eq!(state.messages().len(), 2);
/// # Ok::<_, golem_ui::TurnError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rewind {
    /// The turn it goes back to.
    pub turn: TurnAt,
    /// The turn's new user message, for an edit; `None` asks the turn again as it was.
    pub prompt: Option<String>,
}

/// A turn of a thread, as a client names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TurnAt {
    /// The turn whose request is message `n` of the history: the turn of the assistant
    /// message a `ChatServer` streamed as `<thread>-<n>`.
    Answer(usize),
    /// The turn of the user's `nth` message (from 0) after the turn at message `after`, or
    /// from the thread's start.
    Prompt {
        /// The turn the messages are counted after.
        after: Option<usize>,
        /// How many of the user's messages come before it, after that turn.
        nth: usize,
    },
}

impl Rewind {
    /// A rewind that asks `turn` again as it was.
    pub fn regenerate(turn: TurnAt) -> Self {
        Rewind { turn, prompt: None }
    }

    /// A rewind that asks `turn` again with `prompt` as its user message.
    pub fn edit(turn: TurnAt, prompt: impl Into<String>) -> Self {
        Rewind {
            turn,
            prompt: Some(prompt.into()),
        }
    }

    /// Cuts `state` back to the turn and puts the edited prompt in, so that the run restored
    /// from it asks that turn again: the index of the turn's request in the history, which
    /// is where the history now ends.
    ///
    /// A turn whose request was never sent (a run stopped before it) is the request the
    /// state sends next, and stays so.
    ///
    /// # Errors
    /// [`TurnError::UnknownTurn`] when the history has no such turn, [`TurnError::Empty`]
    /// for an edit to an empty message. On error `state` is unchanged.
    pub fn apply(self, state: &mut RunState) -> Result<usize, TurnError> {
        if self
            .prompt
            .as_ref()
            .is_some_and(|prompt| prompt.trim().is_empty())
        {
            return Err(TurnError::Empty);
        }
        let sent = state.messages().len();
        let starts = state
            .messages()
            .iter()
            .enumerate()
            .filter_map(|(index, message)| match message {
                Message::Request(request) if request.has_user_prompt() => Some(index),
                _ => None,
            })
            .chain(
                state
                    .pending()
                    .filter(|request| request.has_user_prompt())
                    .map(|_| sent),
            );
        let index = match self.turn {
            TurnAt::Answer(turn) => {
                let mut starts = starts;
                starts.find(|&start| start == turn)
            }
            TurnAt::Prompt { after, nth } => starts
                .filter(|&start| after.is_none_or(|after| start > after))
                .nth(nth),
        }
        .ok_or(TurnError::UnknownTurn)?;
        if index < sent {
            state.rewind(index).map_err(|_| TurnError::UnknownTurn)?;
        }
        if let Some(prompt) = self.prompt {
            state
                .replace_prompt(prompt)
                .map_err(|_| TurnError::UnknownTurn)?;
        }
        // Asked again, the turn is a new run, whatever ended the one before.
        state.start_new_run();
        Ok(index)
    }
}
