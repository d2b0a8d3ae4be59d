//! The provider chosen in the workbench (alt-p, or the local model once it arrived): what was chosen
//! for another provider and does not fit this one is reset.

use crate::provider::kind::ProviderKind;
use crate::tui::state::State;

/// Runs go to `provider` from now on. What was chosen for another provider and does not fit this one
/// is reset: a model typed for one provider is not sent to another (the prompt's own model comes back
/// when its provider does), and the note says so.
pub fn choose_provider(state: &mut State, provider: ProviderKind) {
    if state.choice.provider == provider {
        return;
    }
    state.choice.provider = provider;
    let own = state.saved.provider.name.as_deref().map(str::trim).and_then(ProviderKind::parse) == Some(provider);
    let model = if own { state.saved.provider.model.clone() } else { None };
    let dropped = state.choice.model.clone().filter(|m| !m.is_empty() && Some(m) != model.as_ref());
    state.choice.model = model;
    state.note = Some(match dropped {
        Some(old) => format!(
            "provider: {provider} (model {old:?} was chosen for another provider: {}; alt-o types one)",
            state.choice.model.as_deref().map_or("this one's default".to_string(), |m| format!("{m:?} now"))
        ),
        None => format!("provider: {provider}"),
    });
    crate::tui::workbench::lint::relint(state);
}
