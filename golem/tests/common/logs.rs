//! Every tracing event and span field, at every level, as text: a global subscriber, so a
//! test binary that uses it must not install another.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// The lines logged so far (installs the subscriber on first use).
pub fn logs() -> &'static Arc<Mutex<Vec<String>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<String>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        use tracing_subscriber::layer::SubscriberExt;
        let logs = Arc::new(Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry().with(Capture(Arc::clone(&logs)));
        tracing::subscriber::set_global_default(subscriber).expect("first subscriber");
        logs
    })
}

struct Capture(Arc<Mutex<Vec<String>>>);

struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, " {}={value}", field.name());
    }
}

impl Capture {
    fn push(&self, line: Line) {
        self.0.lock().expect("not poisoned").push(line.0);
    }
}

impl<S: Subscriber> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, _ctx: Context<'_, S>) {
        let mut line = Line(format!("span {}", attrs.metadata().name()));
        attrs.record(&mut line);
        self.push(line);
    }

    fn on_record(&self, _id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        let mut line = Line("record".to_owned());
        values.record(&mut line);
        self.push(line);
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut line = Line(format!("event {}", event.metadata().level()));
        event.record(&mut line);
        self.push(line);
    }
}
