//! Dependencies: a support agent whose tools read a customer database handed to the run.
//! The model first looks up a customer id that does not exist; the tool says which ids
//! do, and the model tries again.
//!
//! ```text
//! cargo run --example deps-injection                       # offline, a scripted model
//! OPENAI_API_KEY=sk-... cargo run --example deps-injection # a real model
//! ```

use std::collections::HashMap;
use std::sync::Mutex;

use golem::model::function::FunctionModel;
use golem::model::{Message, Model, ModelResponse};
use golem::{Agent, ModelRetry, RunContext};
use golem_examples::{Transcript, openai_from_env, usage_line};

/// The support desk's dependencies: a customer database and a log of actions taken.
#[derive(Debug)]
pub(crate) struct SupportDesk {
    customers: HashMap<u32, Customer>,
    actions: Mutex<Vec<String>>,
}

#[derive(Debug, Clone)]
struct Customer {
    name: String,
    plan: String,
    balance_cents: i64,
}

impl SupportDesk {
    /// A desk with two customers.
    pub(crate) fn sample() -> Self {
        let mut customers = HashMap::new();
        customers.insert(
            1042,
            Customer {
                name: "Ann Lee".into(),
                plan: "team".into(),
                balance_cents: -1999,
            },
        );
        customers.insert(
            1043,
            Customer {
                name: "Bob Ray".into(),
                plan: "solo".into(),
                balance_cents: 0,
            },
        );
        SupportDesk {
            customers,
            actions: Mutex::new(Vec::new()),
        }
    }
}

/// Look up a customer's name, plan and balance.
///
/// # Arguments
/// * `customer_id` - the customer's numeric id
#[golem::tool(max_retries = 2)]
async fn customer_info(
    ctx: &RunContext<SupportDesk>,
    customer_id: u32,
) -> Result<String, ModelRetry> {
    let desk = ctx.deps();
    let Some(customer) = desk.customers.get(&customer_id) else {
        let mut known: Vec<u32> = desk.customers.keys().copied().collect();
        known.sort_unstable();
        return Err(ModelRetry::new(format!(
            "no customer {customer_id}; known ids: {known:?}"
        )));
    };
    Ok(format!(
        "{} is on the {} plan with a balance of {:.2} USD",
        customer.name,
        customer.plan,
        customer.balance_cents as f64 / 100.0
    ))
}

/// Record that a payment reminder was sent to a customer.
///
/// # Arguments
/// * `customer_id` - the customer's numeric id
#[golem::tool]
async fn send_reminder(ctx: &RunContext<SupportDesk>, customer_id: u32) -> String {
    let note = format!("payment reminder sent to customer {customer_id}");
    ctx.deps()
        .actions
        .lock()
        .expect("not poisoned")
        .push(note.clone());
    note
}

/// Plays the model offline.
pub(crate) fn scripted_model() -> FunctionModel {
    FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call("customer_info", r#"{"customer_id": 1024}"#, "call_1")
            .with_usage(140, 19),
        3 => ModelResponse::tool_call("customer_info", r#"{"customer_id": 1042}"#, "call_2")
            .with_usage(190, 19),
        5 => ModelResponse::tool_call("send_reminder", r#"{"customer_id": 1042}"#, "call_3")
            .with_usage(240, 19),
        _ => ModelResponse::text(
            "Ann Lee (team plan) owes 19.99 USD; I have sent her a payment reminder.",
        )
        .with_usage(290, 21),
    })
    .with_name("scripted")
}

/// Answers the ticket with `model` and returns what the example prints.
pub(crate) async fn run(model: impl Model) -> Result<String, Box<dyn std::error::Error>> {
    let agent = Agent::<SupportDesk, String>::builder(model)
        .instructions(
            "You are a support agent. Look customers up before acting; remind those who owe money.",
        )
        .tool(CustomerInfo)
        .tool(SendReminder)
        .build()?;

    let result = agent
        .run(
            "Customer 1042 asks about their balance.",
            SupportDesk::sample(),
        )
        .await?;

    Ok(format!(
        "{}{}\nanswer: {}\n",
        Transcript::new(0, 0)
            .tool_budget("customer_info", 2)
            .render(&result.messages),
        usage_line(&result.usage),
        result.output
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let output = match openai_from_env() {
        Some(model) => run(model).await?,
        None => {
            println!("OPENAI_API_KEY is not set: a scripted model plays the part.\n");
            run(scripted_model()).await?
        }
    };
    print!("{output}");
    Ok(())
}
