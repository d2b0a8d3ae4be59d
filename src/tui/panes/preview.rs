//! The exact request a run sends, rendered from the edited template and the chosen variables, and
//! the same as a curl command for an OpenAI-compatible server.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;
use serde_json::json;

use super::block;
use crate::prompt::template::Variables;
use crate::safe_text::escape_controls;
use crate::tui::edit;
use crate::tui::state::{Pane, State};
use crate::tui::theme::Theme;

/// The request's messages as JSON (`[{"role", "content"}]`), or why the prompt does not render.
pub fn messages(state: &State) -> Result<serde_json::Value, String> {
    let prompt = edit::prompt_for_run(state)?;
    let rendered = prompt.render(state.choice.case.as_deref(), &Variables::new()).map_err(|e| e.to_string())?;
    let mut messages = Vec::new();
    if let Some(system) = rendered.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    messages.push(json!({"role": "user", "content": rendered.user}));
    Ok(serde_json::Value::Array(messages))
}

/// A curl command that sends the request to an OpenAI-compatible server (`OPENAI_BASE_URL`).
pub fn curl(state: &State) -> Result<String, String> {
    let mut body =
        json!({"model": state.choice.model.clone().unwrap_or_default(), "messages": messages(state)?, "stream": true});
    if let Some(max) = state.choice.max_tokens {
        body["max_tokens"] = json!(max);
    }
    let body = serde_json::to_string_pretty(&body).map_err(|e| e.to_string())?.replace('\'', "'\\''");
    Ok(format!(
        "curl -sN \"${{OPENAI_BASE_URL:-http://127.0.0.1:8080/v1}}/chat/completions\" \\\n  -H 'content-type: application/json' \\\n  -H \"authorization: Bearer ${{OPENAI_API_KEY:-none}}\" \\\n  -d '{body}'\n"
    ))
}

pub fn render(frame: &mut Frame, area: Rect, state: &State, theme: &Theme) {
    let frame_block =
        block(Pane::System, state, theme, vec![Span::styled("request preview (alt-y: copy as curl) ", theme.dim)]);
    let inner = frame_block.inner(area);
    frame.render_widget(frame_block, area);
    let lines: Vec<Line> = match messages(state) {
        Ok(serde_json::Value::Array(messages)) => messages
            .iter()
            .flat_map(|m| {
                let role = m["role"].as_str().unwrap_or("").to_string();
                let content = escape_controls(m["content"].as_str().unwrap_or("")).into_owned();
                std::iter::once(Line::from(Span::styled(format!("── {role}"), theme.title)))
                    .chain(content.lines().map(|l| Line::from(l.to_string())).collect::<Vec<_>>())
            })
            .collect(),
        Ok(_) => Vec::new(),
        Err(e) => vec![Line::from(Span::styled(e, theme.error))],
    };
    frame.render_widget(Paragraph::new(lines).style(theme.text).wrap(Wrap { trim: false }), inner);
}
