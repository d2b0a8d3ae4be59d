//! What each pane looks like (ratatui TestBackend + insta snapshots): the whole screen mid-stream
//! with valid, invalid and skipped lines and the live truncation chart, each pane zoomed at 80×24
//! after the run, and the overlays.

use std::path::PathBuf;

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use tunebench::tui::msg::{Action, Msg, SweepRequest};
use tunebench::tui::runner::compute_sweep;
use tunebench::tui::state::State;
use tunebench::tui::theme::Theme;
use tunebench::tui::update::update;
use tunebench::tui::view::render;
use tunebench::tui::workbench::state::Pane;

use super::support::*;

fn screen(state: &State, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| render(frame, state, &Theme::default())).unwrap();
    terminal.backend().to_string()
}

/// The sample after its whole recorded answer, swept, with the cut at `cut`.
fn finished(cut: usize) -> State {
    let mut state = sample_state();
    update(&mut state, Msg::Action(Action::Run));
    feed(&mut state, sample_events(None));
    let request = SweepRequest {
        run: state.workbench.run_id,
        answer: state.workbench.run.output.clone(),
        chunk_ends: state.workbench.run.chunk_ends.clone(),
        prompt: state.saved.clone(),
        path: PathBuf::from(SAMPLE),
    };
    let sweep = compute_sweep(&request).unwrap();
    let (run, answer_len) = (request.run, request.answer.len());
    update(&mut state, Msg::SweepReady { run, answer_len, sweep: Ok(Box::new(sweep)) });
    state.workbench.truncation.cut = cut;
    state
}

#[test]
fn whole_screen_mid_stream_shows_valid_invalid_and_skipped_lines() {
    let mut state = sample_state();
    update(&mut state, Msg::Action(Action::Run));
    // Up to the truncated line 7 and a little past it; each sweep asked for comes back, as from the
    // runner, so the truncation chart has grown with the answer.
    let run = state.workbench.run_id;
    for (event, at_ms) in sample_events(Some(190)) {
        for effect in update(&mut state, Msg::Run { run, event: Box::new(event), at_ms }) {
            if let tunebench::tui::msg::Effect::ComputeSweep(request) = effect {
                let sweep = compute_sweep(&request).map(Box::new);
                let (run, answer_len) = (request.run, request.answer.len());
                update(&mut state, Msg::SweepReady { run, answer_len, sweep });
            }
        }
    }
    let text = screen(&state, 120, 40);
    assert!(text.contains("skipped") && text.contains("valid") && text.contains("schema"), "{text}");
    assert!(text.contains("· live") && text.contains("items so far") && text.contains("jsonl"), "{text}");
    insta::assert_snapshot!("mid_stream_120x40", text);
}

#[test]
fn each_pane_zoomed_at_80x24() {
    let mut state = finished(150);
    state.workbench.zoom = true;
    for pane in Pane::ALL {
        state.workbench.focus = pane;
        let name = format!("pane_{}", pane.title().split(' ').next().unwrap_or("pane"));
        insta::assert_snapshot!(name, screen(&state, 80, 24));
    }
}

#[test]
fn truncation_at_a_cut_where_json_and_jsonl_diverge() {
    let state = finished(120);
    let sweep = state.workbench.truncation.sweep.as_ref().unwrap();
    let at = |s| sweep.figures(s)[120].items;
    use tunebench::truncate::strategy::Strategy;
    assert!(at(Strategy::Jsonl) > at(Strategy::Json), "jsonl keeps complete lines where json has nothing");
    let mut state = state;
    state.workbench.focus = Pane::Truncation;
    insta::assert_snapshot!("truncation_120x40", screen(&state, 120, 40));
}

#[test]
fn overlays_help_and_quit() {
    let mut state = sample_state();
    update(&mut state, Msg::Action(Action::ToggleHelp));
    let help = screen(&state, 120, 40);
    assert!(help.contains("ctrl-s") && help.contains("cancel-run"), "{help}");
    insta::assert_snapshot!("help_120x40", help);
    assert!(!help.contains("…"), "nothing of the help is clipped at 120×40:\n{help}");
    let mut state = sample_state();
    type_text(&mut state, "x");
    update(&mut state, Msg::Action(Action::Quit));
    insta::assert_snapshot!("confirm_quit_80x24", screen(&state, 80, 24));
}

#[test]
fn model_output_is_escaped_on_screen() {
    let mut state = sample_state();
    update(&mut state, Msg::Action(Action::Run));
    let run = state.workbench.run_id;
    // ESC sequences (clear, clipboard write), BEL, CR, the 8-bit CSI, DEL and a right-to-left override;
    // the second line is a valid record whose decoded value holds them (the lines pane shows it).
    let evil =
        "{\"a\": \"\u{1b}[2J\u{1b}]52;c;AAAA\u{7}bell\r\u{9b}2J\u{7f}\u{202e}\"}\n{\"a\": \"\\u001b[31m\\u009b\"}\n";
    update(&mut state, Msg::Run { run, event: Box::new(tunebench::run::RunEvent::Delta(evil.into())), at_ms: 5 });
    let text = screen(&state, 120, 40);
    assert!(text.contains("\\u{1b}[2J"), "{text}");
    let raw = text.chars().find(|c| (c.is_control() && *c != '\n') || *c == '\u{202e}');
    assert!(raw.is_none(), "{raw:?} on screen:\n{text}");
}

/// At 80×24 the help is one readable column (nothing clipped mid-word) that scrolls with ↑/↓ to its
/// last line; any other key closes it.
#[test]
fn help_at_80x24_fits_and_scrolls() {
    use ratatui_textarea::Key;
    let mut state = sample_state();
    update(&mut state, Msg::Term(tunebench::tui::msg::TermEvent::Resize(80, 24)));
    update(&mut state, Msg::Action(Action::ToggleHelp));
    let top = screen(&state, 80, 24);
    assert!(top.contains("ctrl-q") && top.contains("quit (asks if edits are unsaved)"), "{top}");
    assert!(!top.contains('…'), "no description is clipped:\n{top}");
    insta::assert_snapshot!("help_80x24", top);
    update(&mut state, special(Key::Down));
    assert_eq!(state.help_scroll, 1);
    update(&mut state, special(Key::End));
    let bottom = screen(&state, 80, 24);
    assert!(
        bottom.contains("keymap.toml in the config directory") && bottom.contains("mark rejected (never best)"),
        "{bottom}"
    );
    insta::assert_snapshot!("help_80x24_end", bottom);
    update(&mut state, special(Key::PageUp));
    assert!(state.help_scroll > 0 && state.overlay == tunebench::tui::state::Overlay::Help);
    update(&mut state, key('x'));
    assert_eq!(state.overlay, tunebench::tui::state::Overlay::None);
}

/// The request preview (alt-v), zoomed: what ctrl-r sends to an OpenAI-compatible server in
/// json-schema mode, the key shown as its variable.
#[test]
fn request_preview_shows_the_request_as_sent() {
    without_local_model();
    let mut state =
        tunebench::tui::setup::state_for(std::path::Path::new("sample-prompts/extract-definitions-json.toml"))
            .expect("the sample loads");
    state.choice.provider = tunebench::provider::kind::ProviderKind::Openai;
    state.choice.structured = Some(tunebench::provider::StructuredMode::JsonSchema);
    state.saved.provider.base_url = Some("http://127.0.0.1:8080/v1".into());
    state.env = |name| (name == "OPENAI_API_KEY").then(|| "sk-not-shown".to_string());
    update(&mut state, Msg::Action(Action::TogglePreview));
    update(&mut state, Msg::Action(Action::ToggleZoom));
    let text = screen(&state, 100, 60);
    assert!(text.contains("authorization: Bearer $OPENAI_API_KEY") && !text.contains("sk-not-shown"), "{text}");
    insta::assert_snapshot!("request_preview_100x60", text);
}

/// The template soft-wrapped (zoomed at 80×24, and in the whole screen at 120×40) with the cursor on
/// a wrapped row, and the status line's token count warning that prompt and max tokens exceed the
/// context window.
#[test]
fn wrapped_template_and_token_count_at_80x24_and_120x40() {
    use ratatui_textarea::Key;
    let mut state = sample_state();
    type_text(&mut state, "Read carefully: ");
    for _ in 0..3 {
        update(&mut state, alt('='));
    }
    let (text, warn) = tunebench::tui::workbench::tokens::status_text(&state.workbench.tokens).unwrap();
    assert!(warn && text.contains("+ 8192 max > 8192 ctx"), "{text}");
    state.workbench.zoom = true;
    screen(&state, 80, 24);
    update(&mut state, special(Key::Down));
    let zoomed = screen(&state, 80, 24);
    assert!(zoomed.contains("Read carefully: Analyse the text below"), "{zoomed}");
    assert!(zoomed.contains("> 8192 ctx"), "{zoomed}");
    insta::assert_snapshot!("wrapped_template_80x24", zoomed);
    state.workbench.zoom = false;
    let whole = screen(&state, 120, 40);
    assert!(whole.contains("prompt ≈") && whole.contains("> 8192 ctx"), "{whole}");
    insta::assert_snapshot!("wrapped_template_120x40", whole);
}

/// The case box (a: add a case) at 80×24 and 120×40, and the confirmation that names the case to delete.
#[test]
fn case_box_and_delete_confirmation() {
    let mut state = sample_state();
    update(&mut state, Msg::Action(Action::FocusVariables));
    update(&mut state, key('a'));
    let small = screen(&state, 80, 24);
    assert!(
        small.contains("new case") && small.contains("name = \"case-3\"") && small.contains("[variables]"),
        "{small}"
    );
    insta::assert_snapshot!("case_box_80x24", small);
    insta::assert_snapshot!("case_box_120x40", screen(&state, 120, 40));
    update(&mut state, special(ratatui_textarea::Key::Esc));
    update(&mut state, key('j'));
    update(&mut state, key('x'));
    let confirm = screen(&state, 80, 24);
    assert!(confirm.contains("Delete the case \"computing-history\"?"), "{confirm}");
    insta::assert_snapshot!("confirm_delete_case_80x24", confirm);
}

/// The output pane coloured by token probability (alt-u): a local-model-like answer whose tokens
/// carry probabilities (the schema's forced text among them, and a token holding escape sequences),
/// each screen line followed by its colour classes: H ≥90%, M ≥50%, L ≥20%, V <20%, F forced, . other.
#[test]
fn output_coloured_by_token_probability() {
    use tunebench::provider::{Alternative, TokenProb};
    use tunebench::run::RunEvent;
    let mut state = sample_state();
    update(&mut state, Msg::Action(Action::Run));
    let run = state.workbench.run_id;
    let tokens: [(&str, Option<f32>); 12] = [
        ("{\"type\":\"", None),
        ("definition", Some(0.97)),
        ("\",\"entity\":\"", None),
        ("vol", Some(0.55)),
        ("cano", Some(0.995)),
        ("\",\"definition\":\"", None),
        ("An", Some(0.41)),
        (" opening", Some(0.12)),
        (" \u{1b}[2J", Some(0.03)),
        (" in", Some(0.91)),
        (" the crust", Some(0.66)),
        ("\"}\n", Some(0.99)),
    ];
    let send = |state: &mut State, event: RunEvent| update(state, Msg::Run { run, event: Box::new(event), at_ms: 5 });
    for (text, p) in tokens {
        send(&mut state, RunEvent::Delta(text.into()));
        let prob = match p {
            None => TokenProb::forced(text),
            Some(p) => TokenProb {
                token: text.into(),
                p: Some(p),
                alt: Some(Alternative { token: "x".into(), p: (1.0 - p) / 2.0 }),
                forced: false,
            },
        };
        send(&mut state, RunEvent::Probs(vec![prob]));
    }
    update(&mut state, Msg::Action(Action::ToggleProbs));
    assert!(state.workbench.show_probs);
    state.workbench.zoom = true;
    state.workbench.focus = Pane::Output;
    let theme = Theme::default();
    let mut terminal = Terminal::new(TestBackend::new(100, 6)).unwrap();
    terminal.draw(|frame| render(frame, &state, &theme)).unwrap();
    let buffer = terminal.backend().buffer().clone();
    let slots = [
        ('H', theme.prob_high),
        ('M', theme.prob_mid),
        ('L', theme.prob_low),
        ('V', theme.prob_very_low),
        ('F', theme.prob_forced),
    ];
    let class = |cell: &ratatui::buffer::Cell| {
        let same = |slot: ratatui::style::Style| {
            slot.fg == Some(cell.fg) && slot.bg.unwrap_or(ratatui::style::Color::Reset) == cell.bg
        };
        slots.iter().find(|(_, slot)| same(*slot)).map_or('.', |(c, _)| *c)
    };
    let mut shown = String::new();
    // The zoomed output pane (the two status lines below it are left out).
    for y in 0..buffer.area.height - 2 {
        let cells: Vec<_> = (0..buffer.area.width).map(|x| &buffer[(x, y)]).collect();
        shown.extend(cells.iter().map(|c| c.symbol()));
        shown.push('\n');
        shown.extend(cells.iter().map(|c| class(c)));
        shown.push('\n');
    }
    assert!(shown.contains("\\u{1b}[2J"), "escaped on screen:\n{shown}");
    assert!(!shown.chars().any(|c| c == '\u{1b}'), "{shown}");
    for letter in ['H', 'M', 'L', 'V', 'F'] {
        assert!(shown.lines().skip(3).step_by(2).any(|l| l.contains(letter)), "{letter} in\n{shown}");
    }
    insta::assert_snapshot!("output_probabilities_100x6", shown);
}
