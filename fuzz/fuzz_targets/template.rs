//! Template rendering and prompt files: no panic on any template, variables or TOML text. The
//! input is `system NUL template NUL variables-JSON`, or a whole prompt file when it has no NUL;
//! a prompt file that reads saves to TOML that reads back to the same prompt.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use tunebench::prompt::file::PromptFile;
use tunebench::prompt::template::{render_prompt, Variables};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, '\0');
    let (first, template, variables) = (parts.next().unwrap_or(""), parts.next(), parts.next());
    let Some(template) = template else {
        let path = Path::new("fuzz.toml");
        if let Ok(prompt) = PromptFile::from_toml_str(first, path) {
            let _ = prompt.render(None, &Variables::new());
            if let Ok(saved) = prompt.to_toml_string() {
                match PromptFile::from_toml_str(&saved, path) {
                    Ok(read_back) => assert_eq!(read_back, prompt, "saved as:\n{saved}"),
                    Err(error) => panic!("saved as:\n{saved}\nwhich does not read back: {error}"),
                }
            }
        }
        return;
    };
    let variables: Variables = variables.and_then(|json| serde_json::from_str(json).ok()).unwrap_or_default();
    let system = (!first.is_empty()).then_some(first);
    if let Err(error) = render_prompt(system, template, &variables) {
        assert!(!error.to_string().is_empty());
    }
});
