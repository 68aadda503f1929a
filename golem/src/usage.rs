//! What a run costs, and limits on it.
//!
//! [`Usage`] sums requests, tokens and tool calls over every round of a run, rejected rounds
//! included, and [`Usage::rejected`] says how much of that went to rounds that ended in a
//! rejection: the price of self-correction, in all, per tool and for the output.
//! [`UsageLimits`] stops a run that would go over a limit with a typed error.

use std::collections::BTreeMap;
use std::ops::AddAssign;

#[cfg(feature = "prices")]
mod prices;

#[cfg(feature = "prices")]
pub use prices::{PRICE_DATA, Price, PriceError, RejectedPrice};

use serde::{Deserialize, Serialize};

/// Requests, tokens and tool calls: of one response, or summed over a run.
///
/// ```
/// use golem::usage::Usage;
///
/// let mut total = Usage::request(120, 30);
/// total += &Usage::request(150, 12);
/// assert_eq!(total.requests, 2);
/// assert_eq!(total.total_tokens(), 312);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    /// Model requests made.
    pub requests: u64,
    /// Tokens sent to the model, cached ones included.
    pub input_tokens: u64,
    /// Tokens the model produced.
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the provider's prompt cache.
    pub cache_write_tokens: u64,
    /// Output tokens the model spent reasoning, where the provider reports them apart
    /// (OpenAI's `completion_tokens_details.reasoning_tokens`); included in
    /// `output_tokens`.
    #[serde(skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
    /// Input tokens of audio, where the provider reports them apart; included in
    /// `input_tokens`.
    #[serde(skip_serializing_if = "is_zero")]
    pub audio_input_tokens: u64,
    /// Output tokens of audio, where the provider reports them apart; included in
    /// `output_tokens`.
    #[serde(skip_serializing_if = "is_zero")]
    pub audio_output_tokens: u64,
    /// Function-tool calls the run executed.
    pub tool_calls: u64,
    /// The share of the above spent on rounds that ended in a rejection.
    #[serde(skip_serializing_if = "RejectedUsage::is_empty")]
    pub rejected: RejectedUsage,
    /// The share of the above spent on summaries of older turns
    /// ([`Summarize`](crate::history::Summarize)).
    #[serde(skip_serializing_if = "RoundCost::is_zero")]
    pub summaries: RoundCost,
    /// The share of the above spent by the agents this run delegated to (an agent called as
    /// a tool, [`Agent::as_tool`](crate::Agent::as_tool)), by the name it was called
    /// under: each its whole usage, its own delegations nested in it.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub agents: BTreeMap<String, Usage>,
}

/// Whether a count is zero, left out of the saved form.
fn is_zero(count: &u64) -> bool {
    *count == 0
}

impl Usage {
    /// The usage of one model request.
    pub fn request(input_tokens: u64, output_tokens: u64) -> Self {
        Usage {
            requests: 1,
            input_tokens,
            output_tokens,
            ..Usage::default()
        }
    }

    /// Input plus output tokens.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// Requests and tokens, without tool calls or the rejected share.
    pub fn cost(&self) -> RoundCost {
        RoundCost {
            requests: self.requests,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
        }
    }
}

impl Usage {
    /// Adds `usage`, spent by the agent called `agent` on this run's behalf: to the totals
    /// (without its own delegations, which stay nested), and apart under
    /// [`agents`](Self::agents).
    pub(crate) fn add_delegated(&mut self, agent: &str, usage: &Usage) {
        let mut own = usage.clone();
        own.agents.clear();
        *self += &own;
        *self.agents.entry(agent.to_owned()).or_default() += usage;
    }
}

impl AddAssign<&Usage> for Usage {
    fn add_assign(&mut self, other: &Usage) {
        // Saturating: the counts come from the network.
        self.requests = self.requests.saturating_add(other.requests);
        self.add_tokens(&other.tokens());
        self.tool_calls = self.tool_calls.saturating_add(other.tool_calls);
        self.rejected += &other.rejected;
        self.summaries += other.summaries;
        for (name, usage) in &other.agents {
            *self.agents.entry(name.clone()).or_default() += usage;
        }
    }
}

impl Usage {
    /// The token counts, as one request's.
    fn tokens(&self) -> RequestUsage {
        RequestUsage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cache_read_tokens: self.cache_read_tokens,
            cache_write_tokens: self.cache_write_tokens,
            reasoning_tokens: self.reasoning_tokens,
            audio_input_tokens: self.audio_input_tokens,
            audio_output_tokens: self.audio_output_tokens,
        }
    }

    /// Adds the token counts of `tokens`, saturating.
    fn add_tokens(&mut self, tokens: &RequestUsage) {
        self.input_tokens = self.input_tokens.saturating_add(tokens.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(tokens.output_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(tokens.cache_read_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(tokens.cache_write_tokens);
        self.reasoning_tokens = self
            .reasoning_tokens
            .saturating_add(tokens.reasoning_tokens);
        self.audio_input_tokens = self
            .audio_input_tokens
            .saturating_add(tokens.audio_input_tokens);
        self.audio_output_tokens = self
            .audio_output_tokens
            .saturating_add(tokens.audio_output_tokens);
    }
}

/// What one model request cost, as the provider reported it: the usage of a
/// [`ModelResponse`](crate::model::ModelResponse). A run adds each response's to its
/// [`Usage`], counting one request for it.
///
/// ```
/// use golem::Usage;
/// use golem::usage::RequestUsage;
///
/// let mut run = Usage::default();
/// run += &RequestUsage::new(120, 30);
/// assert_eq!(run.requests, 1);
/// assert_eq!(run.total_tokens(), 150);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RequestUsage {
    /// Tokens sent to the model, cached ones included.
    pub input_tokens: u64,
    /// Tokens the model produced.
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the provider's prompt cache.
    pub cache_write_tokens: u64,
    /// Output tokens the model spent reasoning, where the provider reports them apart;
    /// included in `output_tokens`.
    #[serde(skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
    /// Input tokens of audio, where the provider reports them apart; included in
    /// `input_tokens`.
    #[serde(skip_serializing_if = "is_zero")]
    pub audio_input_tokens: u64,
    /// Output tokens of audio, where the provider reports them apart; included in
    /// `output_tokens`.
    #[serde(skip_serializing_if = "is_zero")]
    pub audio_output_tokens: u64,
}

impl RequestUsage {
    /// A request that sent `input_tokens` and got `output_tokens` back.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        RequestUsage {
            input_tokens,
            output_tokens,
            ..RequestUsage::default()
        }
    }

    /// Input plus output tokens.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// The request and its tokens, as a round's cost.
    pub fn cost(&self) -> RoundCost {
        RoundCost {
            requests: 1,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
        }
    }
}

impl AddAssign<&RequestUsage> for Usage {
    /// Adds one request and its tokens.
    fn add_assign(&mut self, other: &RequestUsage) {
        self.requests = self.requests.saturating_add(1);
        self.add_tokens(other);
    }
}

impl From<RequestUsage> for Usage {
    /// The usage of a run that made this one request.
    fn from(request: RequestUsage) -> Self {
        let mut usage = Usage::default();
        usage += &request;
        usage
    }
}

/// Requests and tokens of one or more model rounds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundCost {
    /// Model requests.
    pub requests: u64,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
}

impl RoundCost {
    /// Whether nothing was spent.
    pub fn is_zero(&self) -> bool {
        *self == RoundCost::default()
    }
}

impl AddAssign for RoundCost {
    fn add_assign(&mut self, other: RoundCost) {
        self.requests = self.requests.saturating_add(other.requests);
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
    }
}

/// What rounds that ended in a rejection cost.
///
/// A round is one model request and the response it got. It counts here when golem rejected
/// something in that response. It counts once in [`total`](Self::total), and once for every
/// culprit in it: each rejected tool, the output, unknown tool names. So the per-culprit
/// figures can add up to more than the total when one response was rejected for several
/// reasons.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RejectedUsage {
    /// Rounds that ended in any rejection.
    pub total: RoundCost,
    /// Rounds whose output was rejected.
    pub output: RoundCost,
    /// Rounds in which the named tool was rejected.
    pub tools: BTreeMap<String, RoundCost>,
    /// Rounds in which the model called a tool that does not exist.
    pub unknown_tools: RoundCost,
}

impl RejectedUsage {
    /// Whether no round was rejected.
    pub fn is_empty(&self) -> bool {
        self.total.is_zero()
            && self.output.is_zero()
            && self.tools.is_empty()
            && self.unknown_tools.is_zero()
    }
}

impl AddAssign<&RejectedUsage> for RejectedUsage {
    fn add_assign(&mut self, other: &RejectedUsage) {
        self.total += other.total;
        self.output += other.output;
        self.unknown_tools += other.unknown_tools;
        for (name, cost) in &other.tools {
            *self.tools.entry(name.clone()).or_default() += *cost;
        }
    }
}

/// Limits on what one run may spend. All are off by default.
///
/// ```
/// use golem::usage::UsageLimits;
///
/// let limits = UsageLimits::new().request_limit(10).total_tokens_limit(50_000);
/// assert_eq!(limits.requests(), Some(10));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageLimits {
    requests: Option<u64>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    total_tokens: Option<u64>,
    tool_calls: Option<u64>,
    request_tokens: Option<u64>,
    count_request_tokens: bool,
}

impl UsageLimits {
    /// No limits.
    pub fn new() -> Self {
        UsageLimits::default()
    }

    /// At most `limit` model requests.
    #[must_use]
    pub fn request_limit(mut self, limit: u64) -> Self {
        self.requests = Some(limit);
        self
    }

    /// At most `limit` input tokens.
    #[must_use]
    pub fn input_tokens_limit(mut self, limit: u64) -> Self {
        self.input_tokens = Some(limit);
        self
    }

    /// At most `limit` output tokens.
    #[must_use]
    pub fn output_tokens_limit(mut self, limit: u64) -> Self {
        self.output_tokens = Some(limit);
        self
    }

    /// At most `limit` input and output tokens together.
    #[must_use]
    pub fn total_tokens_limit(mut self, limit: u64) -> Self {
        self.total_tokens = Some(limit);
        self
    }

    /// At most `limit` function-tool calls.
    #[must_use]
    pub fn tool_calls_limit(mut self, limit: u64) -> Self {
        self.tool_calls = Some(limit);
        self
    }

    /// At most `limit` input tokens in any one request (its messages as the history
    /// processors leave them, its instructions and its tool schemas), estimated (see
    /// [`estimate_request_tokens`](crate::history::estimate_request_tokens)) or counted by
    /// the provider ([`count_request_tokens`](Self::count_request_tokens)), checked before
    /// it is sent: a request over it is not sent, and the run fails with
    /// [`LimitExceeded::RequestTokens`]. Keep the history under it with a processor such as
    /// [`FitTokens`](crate::history::FitTokens).
    #[must_use]
    pub fn request_tokens_limit(mut self, limit: u64) -> Self {
        self.request_tokens = Some(limit);
        self
    }

    /// Checks [`request_tokens_limit`](Self::request_tokens_limit) against the model's own
    /// count where its provider has one ([`Model::count_tokens`](crate::model::Model::count_tokens):
    /// Anthropic's token-counting endpoint), at the cost of one more HTTP request before
    /// each request; against the estimate for every other model. Off by default: the
    /// estimate needs no request.
    #[must_use]
    pub fn count_request_tokens(mut self, count: bool) -> Self {
        self.count_request_tokens = count;
        self
    }

    /// Whether the limit on one request's tokens asks the provider to count.
    pub fn counts_request_tokens(&self) -> bool {
        self.count_request_tokens
    }

    /// What is left of these limits after `used`: each limit lowered by what `used` spent of
    /// it (the limit on one request's tokens stays as it is). An agent called as a tool runs
    /// under what its caller has left, so the caller's limits bound the whole tree.
    ///
    /// ```
    /// use golem::usage::{Usage, UsageLimits};
    ///
    /// let limits = UsageLimits::new().request_limit(10).total_tokens_limit(1_000);
    /// let left = limits.remaining(&Usage::request(300, 100));
    /// assert_eq!(left.requests(), Some(9));
    /// ```
    #[must_use]
    pub fn remaining(&self, used: &Usage) -> UsageLimits {
        let left = |limit: Option<u64>, spent: u64| limit.map(|limit| limit.saturating_sub(spent));
        UsageLimits {
            requests: left(self.requests, used.requests),
            input_tokens: left(self.input_tokens, used.input_tokens),
            output_tokens: left(self.output_tokens, used.output_tokens),
            total_tokens: left(self.total_tokens, used.total_tokens()),
            tool_calls: left(self.tool_calls, used.tool_calls),
            request_tokens: self.request_tokens,
            count_request_tokens: self.count_request_tokens,
        }
    }

    /// The tighter of these limits and `other`, limit by limit.
    pub(crate) fn within(&self, other: &UsageLimits) -> UsageLimits {
        let tighter = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        UsageLimits {
            requests: tighter(self.requests, other.requests),
            input_tokens: tighter(self.input_tokens, other.input_tokens),
            output_tokens: tighter(self.output_tokens, other.output_tokens),
            total_tokens: tighter(self.total_tokens, other.total_tokens),
            tool_calls: tighter(self.tool_calls, other.tool_calls),
            request_tokens: tighter(self.request_tokens, other.request_tokens),
            count_request_tokens: self.count_request_tokens || other.count_request_tokens,
        }
    }

    /// The request limit, if any.
    pub fn requests(&self) -> Option<u64> {
        self.requests
    }

    /// The tool-call limit, if any.
    pub fn tool_calls(&self) -> Option<u64> {
        self.tool_calls
    }

    /// Checked before each model request: would one more request go over the limit?
    ///
    /// # Errors
    /// [`LimitExceeded::Requests`] when it would.
    pub fn check_before_request(&self, usage: &Usage) -> Result<(), LimitExceeded> {
        match self.requests {
            Some(limit) if usage.requests.saturating_add(1) > limit => {
                Err(LimitExceeded::Requests { limit })
            }
            _ => Ok(()),
        }
    }

    /// The limit on one request's estimated input tokens, if any.
    pub fn request_tokens(&self) -> Option<u64> {
        self.request_tokens
    }

    /// Checked before a request is sent: are its input `tokens` (counted or estimated)
    /// over the limit?
    ///
    /// # Errors
    /// [`LimitExceeded::RequestTokens`] when they are.
    pub fn check_request_tokens(&self, tokens: u64) -> Result<(), LimitExceeded> {
        match self.request_tokens {
            Some(limit) if tokens > limit => Err(LimitExceeded::RequestTokens { limit, tokens }),
            _ => Ok(()),
        }
    }

    /// Checked after each response: are the tokens over a limit?
    ///
    /// # Errors
    /// The first token limit that `usage` is over.
    pub fn check_tokens(&self, usage: &Usage) -> Result<(), LimitExceeded> {
        let checks = [
            (self.input_tokens, usage.input_tokens, TokenKind::Input),
            (self.output_tokens, usage.output_tokens, TokenKind::Output),
            (self.total_tokens, usage.total_tokens(), TokenKind::Total),
        ];
        for (limit, used, kind) in checks {
            if let Some(limit) = limit
                && used > limit
            {
                return Err(LimitExceeded::Tokens { kind, limit, used });
            }
        }
        Ok(())
    }

    /// Checked before a turn's tool calls run: would `calls` more go over the limit?
    ///
    /// # Errors
    /// [`LimitExceeded::ToolCalls`] when they would.
    pub fn check_tool_calls(&self, usage: &Usage, calls: u64) -> Result<(), LimitExceeded> {
        match self.tool_calls {
            Some(limit) if usage.tool_calls.saturating_add(calls) > limit => {
                Err(LimitExceeded::ToolCalls {
                    limit,
                    requested: usage.tool_calls.saturating_add(calls),
                })
            }
            _ => Ok(()),
        }
    }
}

/// Which tokens a token limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// Input tokens.
    Input,
    /// Output tokens.
    Output,
    /// Input and output tokens together.
    Total,
}

impl std::fmt::Display for TokenKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TokenKind::Input => "input",
            TokenKind::Output => "output",
            TokenKind::Total => "total",
        })
    }
}

/// A limit a run reached; the cause of a [`RunError`](crate::RunError) at the limit stage.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitExceeded {
    /// The run used all its model turns without producing an output.
    #[error("the model-turn limit of {limit} was reached without a final output")]
    Turns {
        /// The limit.
        limit: u32,
    },
    /// One more request would go over the request limit.
    #[error("the next request would exceed the request limit of {limit}")]
    Requests {
        /// The limit.
        limit: u64,
    },
    /// Tokens went over a token limit.
    #[error("{used} {kind} tokens exceed the limit of {limit}")]
    Tokens {
        /// Which tokens.
        kind: TokenKind,
        /// The limit.
        limit: u64,
        /// The tokens used so far.
        used: u64,
    },
    /// The turn's tool calls would go over the tool-call limit.
    #[error("{requested} tool calls would exceed the limit of {limit}")]
    ToolCalls {
        /// The limit.
        limit: u64,
        /// The tool calls the run would have made with this turn's.
        requested: u64,
    },
    /// The next request's input tokens, estimated or counted by the provider, are over the
    /// limit on one request; it was not sent.
    #[error("the next request's {tokens} input tokens exceed the limit of {limit} per request")]
    RequestTokens {
        /// The limit.
        limit: u64,
        /// The request's input tokens, as estimated or counted.
        tokens: u64,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_check_at_their_boundaries() {
        let limits = UsageLimits::new()
            .request_limit(2)
            .output_tokens_limit(10)
            .tool_calls_limit(3);
        let mut usage = Usage::request(5, 10);
        assert_eq!(limits.check_before_request(&usage), Ok(()));
        assert_eq!(limits.check_tokens(&usage), Ok(()));
        usage += &Usage::request(1, 1);
        assert_eq!(
            limits.check_before_request(&usage),
            Err(LimitExceeded::Requests { limit: 2 })
        );
        assert_eq!(
            limits.check_tokens(&usage),
            Err(LimitExceeded::Tokens {
                kind: TokenKind::Output,
                limit: 10,
                used: 11
            })
        );
        usage.tool_calls = 2;
        assert_eq!(limits.check_tool_calls(&usage, 1), Ok(()));
        assert_eq!(
            limits.check_tool_calls(&usage, 2),
            Err(LimitExceeded::ToolCalls {
                limit: 3,
                requested: 4
            })
        );
    }

    #[test]
    fn rejected_usage_adds_per_culprit() {
        let mut a = RejectedUsage::default();
        a.tools.insert("t".into(), Usage::request(3, 1).cost());
        let mut b = RejectedUsage::default();
        b.tools.insert("t".into(), Usage::request(2, 2).cost());
        b.total = Usage::request(2, 2).cost();
        a += &b;
        assert_eq!(
            a.tools["t"],
            RoundCost {
                requests: 2,
                input_tokens: 5,
                output_tokens: 3
            }
        );
        assert_eq!(a.total.requests, 1);
    }
}
