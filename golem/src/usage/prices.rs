//! What a run cost in money, from the [`genai-prices`](https://github.com/pydantic/genai-prices)
//! data bundled with the crate of that name (no network at run time). Behind the cargo
//! feature `prices`.

use std::collections::BTreeMap;
use std::fmt;

use genai_prices::{ErrorKind, PriceRequest, UsageKey};

use super::{RoundCost, Usage};

/// The version of the `genai-prices` crate whose bundled data golem prices with: the data
/// is as of that release.
pub const PRICE_DATA: &str = "genai-prices 0.2.1";

/// What some usage cost, in US dollars, at the rates in effect now.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Price {
    /// Input and output together.
    pub total: f64,
    /// The input tokens (cache reads and writes at their own rates).
    pub input: f64,
    /// The output tokens.
    pub output: f64,
    /// The provider the price data matched.
    pub provider: String,
    /// The model the price data matched.
    pub model: String,
}

/// What the rounds that ended in a rejection cost, in US dollars: in all, for the output,
/// by tool, and for calls of unknown tools. Rejected rounds are priced by their input and
/// output tokens, without cache discounts (their cache split is not kept), so this is an
/// upper bound when the provider cached.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RejectedPrice {
    /// All rejected rounds.
    pub total: f64,
    /// Rounds whose output was rejected.
    pub output: f64,
    /// Rounds with a rejected call, by tool.
    pub tools: BTreeMap<String, f64>,
    /// Rounds with a call of a tool the agent does not have.
    pub unknown_tools: f64,
}

/// Why usage could not be priced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PriceError {
    /// The price data has no such provider.
    #[error("no prices for the provider `{provider}` in {PRICE_DATA}")]
    UnknownProvider {
        /// The provider asked for.
        provider: String,
    },
    /// The price data has no such model at that provider.
    #[error("no prices for the model `{model}` of `{provider}` in {PRICE_DATA}")]
    UnknownModel {
        /// The provider asked for.
        provider: String,
        /// The model asked for.
        model: String,
    },
    /// The price data refused the usage or could not be read.
    #[error("cannot price this usage: {message}")]
    Other {
        /// What the price data said.
        message: String,
    },
}

impl Usage {
    /// What this usage cost with `model` of `provider` (`"openai"`, `"anthropic"`, as
    /// [`Model::system`](crate::model::Model::system) names them), at the rates in effect
    /// now: cache reads and writes, and audio, at their own rates where the data has them;
    /// reasoning tokens are output tokens. The usage of delegated agents
    /// ([`agents`](Self::agents)) is in the totals, at this model's rates: price each
    /// agent's usage with its own model for the tree.
    ///
    /// ```
    /// use golem::usage::Usage;
    ///
    /// let usage = Usage::request(1_000_000, 0);
    /// let price = usage.price("openai", "gpt-4o-mini")?;
    /// assert!(price.total > 0.0 && price.output == 0.0);
    /// assert!(Usage::request(1, 1).price("openai", "no-such-model").is_err());
    /// # Ok::<_, golem::usage::PriceError>(())
    /// ```
    ///
    /// # Errors
    /// [`PriceError::UnknownProvider`] or [`PriceError::UnknownModel`] when the price data
    /// has no prices for them.
    pub fn price(&self, provider: &str, model: &str) -> Result<Price, PriceError> {
        let mut usage = genai_prices::Usage::new();
        let mut put = |key: UsageKey, count: u64| {
            if count > 0 {
                #[allow(
                    clippy::cast_precision_loss,
                    reason = "token counts are far below 2^52"
                )]
                usage.insert(key, count as f64);
            }
        };
        put(UsageKey::INPUT_TOKENS, self.input_tokens);
        put(UsageKey::OUTPUT_TOKENS, self.output_tokens);
        put(UsageKey::CACHE_READ_TOKENS, self.cache_read_tokens);
        put(UsageKey::CACHE_WRITE_TOKENS, self.cache_write_tokens);
        put(UsageKey::INPUT_AUDIO_TOKENS, self.audio_input_tokens);
        put(UsageKey::OUTPUT_AUDIO_TOKENS, self.audio_output_tokens);
        price(&usage, provider, model)
    }

    /// What the rounds that ended in a rejection cost with `model` of `provider`: what
    /// self-correction cost, in money (see [`RejectedPrice`]).
    ///
    /// # Errors
    /// As for [`price`](Self::price).
    pub fn rejected_price(&self, provider: &str, model: &str) -> Result<RejectedPrice, PriceError> {
        let rejected = &self.rejected;
        let of = |cost: &RoundCost| -> Result<f64, PriceError> {
            if cost.is_zero() {
                return Ok(0.0);
            }
            let mut usage = genai_prices::Usage::new();
            #[allow(
                clippy::cast_precision_loss,
                reason = "token counts are far below 2^52"
            )]
            {
                usage.insert(UsageKey::INPUT_TOKENS, cost.input_tokens as f64);
                usage.insert(UsageKey::OUTPUT_TOKENS, cost.output_tokens as f64);
            }
            Ok(price(&usage, provider, model)?.total)
        };
        // An unknown model fails here even when nothing was rejected.
        Usage::default().price(provider, model)?;
        Ok(RejectedPrice {
            total: of(&rejected.total)?,
            output: of(&rejected.output)?,
            tools: rejected
                .tools
                .iter()
                .map(|(tool, cost)| Ok((tool.clone(), of(cost)?)))
                .collect::<Result<_, PriceError>>()?,
            unknown_tools: of(&rejected.unknown_tools)?,
        })
    }
}

fn price(usage: &genai_prices::Usage, provider: &str, model: &str) -> Result<Price, PriceError> {
    let request = PriceRequest::new(model, usage).with_provider_id(provider);
    match genai_prices::calculate(&request) {
        Ok(calculated) => Ok(Price {
            total: calculated.total_price,
            input: calculated.input_price,
            output: calculated.output_price,
            provider: calculated.provider_id,
            model: calculated.model_id,
        }),
        Err(error) => Err(match error.kind() {
            ErrorKind::ProviderNotFound => PriceError::UnknownProvider {
                provider: provider.to_owned(),
            },
            ErrorKind::ModelNotFound => PriceError::UnknownModel {
                provider: provider.to_owned(),
                model: model.to_owned(),
            },
            _ => PriceError::Other {
                message: error.to_string(),
            },
        }),
    }
}

impl fmt::Display for Price {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "${:.6}", self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejected_rounds_are_priced_as_their_share_of_the_run() {
        let mut usage = Usage::request(3_000, 300);
        usage.rejected.total = RoundCost {
            requests: 1,
            input_tokens: 1_000,
            output_tokens: 100,
        };
        usage
            .rejected
            .tools
            .insert("roll_dice".to_owned(), usage.rejected.total);
        let whole = usage.price("openai", "gpt-4o-mini").unwrap();
        let rejected = usage.rejected_price("openai", "gpt-4o-mini").unwrap();
        // A third of the tokens, a third of the price (no cache in play).
        assert!((rejected.total * 3.0 - whole.total).abs() < 1e-12);
        assert!((rejected.tools["roll_dice"] - rejected.total).abs() < 1e-12);
        assert!(rejected.output.abs() < 1e-12);
        assert_eq!(whole.provider, "openai");
    }

    #[test]
    fn cache_reads_are_priced_below_fresh_input() {
        let fresh = Usage::request(1_000_000, 0)
            .price("openai", "gpt-4o-mini")
            .unwrap();
        let cached = Usage {
            cache_read_tokens: 1_000_000,
            ..Usage::request(1_000_000, 0)
        }
        .price("openai", "gpt-4o-mini")
        .unwrap();
        assert!(cached.total < fresh.total);
    }

    #[test]
    fn an_unknown_model_or_provider_is_a_typed_error() {
        assert_eq!(
            Usage::request(1, 1).price("openai", "no-such-model"),
            Err(PriceError::UnknownModel {
                provider: "openai".to_owned(),
                model: "no-such-model".to_owned()
            })
        );
        assert!(matches!(
            Usage::default().rejected_price("no-such-provider", "gpt-4o"),
            Err(PriceError::UnknownProvider { .. })
        ));
    }
}
