//! The request ctrl-r sends (alt-v), built by [`crate::tui::workbench::request::sent`] from the plan a run makes
//! and the provider's own request code: method, URL, headers (the key as `$VARIABLE`), each message
//! as text, then the rest of the body as JSON; and the same as a curl command (alt-y).

use crate::provider::kind::ProviderKind;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;
use serde_json::Value;

use crate::provider::{ModeReport, Outgoing, Request};
use crate::safe_text::{escape_controls, escape_json_text};
use crate::tui::panes::block;
use crate::tui::state::State;
use crate::tui::theme::Theme;
use crate::tui::workbench::request::{self, Sent};
use crate::tui::workbench::state::Pane;

/// A curl command that sends what ctrl-r sends (see [`request::curl`]).
pub fn curl(state: &State) -> Result<String, String> {
    request::curl(state)
}

/// The preview's text lines: a heading style and the text, every piece from the prompt, the
/// environment or the server's name escaped.
pub fn lines(state: &State) -> Vec<(Kind, String)> {
    match request::sent(state) {
        Ok(Sent::Http { outgoing, mode }) => http_lines(&outgoing, &mode),
        Ok(Sent::InProcess { provider, request, mode }) => in_process_lines(provider, &request, &mode),
        Err(e) => vec![(Kind::Error, escape_controls(&e).into_owned())],
    }
}

/// How a preview line is styled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Title,
    Dim,
    Text,
    Error,
}

fn http_lines(outgoing: &Outgoing, mode: &ModeReport) -> Vec<(Kind, String)> {
    let mut out = vec![(Kind::Title, escape_controls(&format!("{} {}", outgoing.method, outgoing.url)).into_owned())];
    for header in &outgoing.headers {
        out.push((Kind::Dim, escape_controls(&format!("{}: {}", header.name, header.shown())).into_owned()));
    }
    out.extend(mode_lines(mode));
    let mut rest = outgoing.body.clone();
    if let Some(Value::String(system)) = rest.get("system").cloned() {
        text_section(&mut out, "system", &system);
        if let Value::Object(map) = &mut rest {
            map.shift_remove("system");
        }
    }
    if let Some(Value::Array(messages)) = rest.get("messages").cloned() {
        let as_text: Option<Vec<(&str, &str)>> =
            messages.iter().map(|m| Some((m["role"].as_str()?, m["content"].as_str()?))).collect();
        if let Some(as_text) = as_text {
            as_text.iter().for_each(|(role, content)| text_section(&mut out, role, content));
            if let Value::Object(map) = &mut rest {
                map.shift_remove("messages");
            }
        }
    }
    out.push((Kind::Title, "── the rest of the body".into()));
    let json = serde_json::to_string_pretty(&rest).unwrap_or_else(|_| rest.to_string());
    out.extend(escape_json_text(&json).lines().map(|l| (Kind::Text, l.to_string())));
    out
}

fn in_process_lines(provider: ProviderKind, request: &Request, mode: &ModeReport) -> Vec<(Kind, String)> {
    let what = if provider == ProviderKind::Replay { "plays a recorded answer" } else { "runs in this process" };
    let mut out = vec![(Kind::Title, format!("{provider}: {what}, no HTTP request; it is handed these messages"))];
    if !request.model.is_empty() {
        out.push((Kind::Dim, escape_controls(&format!("model: {}", request.model)).into_owned()));
    }
    out.extend(mode_lines(mode));
    for message in &request.messages {
        text_section(&mut out, message.role.as_str(), &message.content);
    }
    out
}

/// The structured mode asked for and used, with each step down and why.
fn mode_lines(mode: &ModeReport) -> Vec<(Kind, String)> {
    let mut out = vec![(Kind::Dim, format!("structured: {} (asked: {})", mode.used, mode.requested))];
    for step in &mode.fallbacks {
        let text = format!("  {} → {}: {}", step.from, step.to, step.reason);
        out.push((Kind::Dim, escape_controls(&text).into_owned()));
    }
    out
}

fn text_section(out: &mut Vec<(Kind, String)>, role: &str, content: &str) {
    out.push((Kind::Title, escape_controls(&format!("── {role}")).into_owned()));
    out.extend(escape_controls(content).lines().map(|l| (Kind::Text, l.to_string())));
}

pub fn render(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let frame_block =
        block(Pane::System, state, theme, vec![Span::styled("request preview (alt-y: copy as curl) ", theme.dim)]);
    let inner = frame_block.inner(area);
    frame.render_widget(frame_block, area);
    let style = |kind: Kind| -> Style {
        match kind {
            Kind::Title => theme.title,
            Kind::Dim => theme.dim,
            Kind::Text => theme.text,
            Kind::Error => theme.error,
        }
    };
    let lines: Vec<Line> =
        lines(state).into_iter().map(|(kind, text)| Line::from(Span::styled(text, style(kind)))).collect();
    frame.render_widget(Paragraph::new(lines).style(theme.text).wrap(Wrap { trim: false }), inner);
}
