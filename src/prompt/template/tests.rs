//! Unit tests of template rendering and the Mustache translation.

use serde_json::json;

use super::*;

fn vars(value: serde_json::Value) -> Variables {
    match value {
        serde_json::Value::Object(map) => map,
        _ => panic!("test variables must be an object"),
    }
}

fn render(src: &str, value: serde_json::Value) -> Result<String, TemplateError> {
    Template::compile(Part::Template, src)?.render(&vars(value))
}

#[test]
fn jinja_and_mustache_variables_render_the_same() {
    assert_eq!(render("Hi {{name}} / {{ name }}", json!({"name": "Ada"})).unwrap(), "Hi Ada / Ada");
    assert_eq!(render("{{user.name}}", json!({"user": {"name": "Bob"}})).unwrap(), "Bob");
}

#[test]
fn undefined_variable_is_named_with_its_line() {
    let err = render("line one\nClassify: {{ txt }}", json!({"text": "x"})).unwrap_err();
    assert_eq!(err, TemplateError::Undefined { part: Part::Template, name: "txt".into(), line: 2 });
    assert!(err.to_string().contains("undefined variable `txt`"), "{err}");
    let err = render("{{ user.email }}", json!({"user": {"name": "Bob"}})).unwrap_err();
    assert!(matches!(&err, TemplateError::Undefined { name, .. } if name == "user.email"), "{err:?}");
}

#[test]
fn sections_iterate_lists_of_maps_and_scalars() {
    let out = render(
        "Categorize: {{#items}}{{name}}, {{/items}}",
        json!({"items": [{"name": "Widget"}, {"name": "Gadget"}]}),
    );
    assert_eq!(out.unwrap(), "Categorize: Widget, Gadget, ");
    let out = render("{{#tags}}[{{.}}]{{/tags}}", json!({"tags": ["a", "b", 3]}));
    assert_eq!(out.unwrap(), "[a][b][3]");
}

#[test]
fn section_names_resolve_element_then_outer_scope() {
    let src = "{{#users}}{{name}} of {{team}}{{#pets}} ({{name}}){{/pets}}; {{/users}}";
    let out = render(
        src,
        json!({"team": "Blue", "users": [{"name": "Ann", "pets": [{"name": "Rex"}]}, {"name": "Bo", "pets": [], "team": "Red"}]}),
    );
    assert_eq!(out.unwrap(), "Ann of Blue (Rex); Bo of Red; ");
}

#[test]
fn truthy_and_falsy_sections() {
    let src = "{{#user}}Hello {{name}}{{/user}}{{^user}}nobody{{/user}}";
    assert_eq!(render(src, json!({"user": {"name": "Ann"}})).unwrap(), "Hello Ann");
    for falsy in [json!(null), json!(false), json!(""), json!([])] {
        assert_eq!(render(src, json!({"user": falsy})).unwrap(), "nobody");
    }
    assert_eq!(render("{{#flag}}on{{/flag}}", json!({"flag": true})).unwrap(), "on");
    assert_eq!(render("{{^items}}none{{/items}}", json!({"items": [1]})).unwrap(), "");
    assert_eq!(render("{{#xs}}{{loop.index}}={{.}} {{/xs}}", json!({"xs": ["a", "b"]})).unwrap(), "1=a 2=b ");
}

#[test]
fn standalone_section_lines_leave_no_blank_lines_and_keep_line_numbers() {
    let src = "Labels:\n{{#labels}}\n- {{.}}\n{{/labels}}\nEnd {{ nope }}";
    let template = Template::compile(Part::Template, src).unwrap();
    let out = template.render(&vars(json!({"labels": ["x", "y"], "nope": "!"}))).unwrap();
    assert_eq!(out, "Labels:\n- x\n- y\nEnd !");
    let err = template.render(&vars(json!({"labels": ["x"]}))).unwrap_err();
    assert_eq!(err, TemplateError::Undefined { part: Part::Template, name: "nope".into(), line: 5 });
    let indented = render("  {{#a}}  \r\nx\n  {{/a}}\n", json!({"a": [1]})).unwrap();
    assert_eq!(indented, "x\n");
}

#[test]
fn undefined_section_and_field_are_errors() {
    let err = render("a\n{{#items}}{{/items}}", json!({})).unwrap_err();
    assert!(matches!(&err, TemplateError::Undefined { name, line: 2, .. } if name == "items"), "{err:?}");
    let err = render("{{#items}}{{nme}}{{/items}}", json!({"items": [{"name": "x"}]})).unwrap_err();
    assert!(matches!(&err, TemplateError::Undefined { name, .. } if name == "nme"), "{err:?}");
}

#[test]
fn unbalanced_sections_are_syntax_errors_with_position() {
    let err = render("x\n {{#a}}", json!({"a": 1})).unwrap_err();
    assert!(matches!(err, TemplateError::Syntax { line: 2, .. }), "{err:?}");
    let err = render("{{#a}}\n{{/b}}", json!({})).unwrap_err();
    match err {
        TemplateError::Syntax { line, column, message, .. } => {
            assert_eq!((line, column), (2, 1));
            assert!(message.contains("`a`"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(render("{{/a}}", json!({})), Err(TemplateError::Syntax { .. })));
    assert!(matches!(render("{{.}}", json!({})), Err(TemplateError::Syntax { .. })));
}

#[test]
fn raw_blocks_comments_and_jinja_expressions_are_left_alone() {
    let out = render("{% raw %}{{#x}}{{/y}}{% endraw %}|{# {{#z}} #}|{{ 'a}}' ~ n }}", json!({"n": 1}));
    assert_eq!(out.unwrap(), "{{#x}}{{/y}}||a}}1");
    assert_eq!(render("{%- raw -%} {{^q}} {%- endraw %}!", json!({})).unwrap(), "{{^q}}!");
    assert_eq!(render("a{{! a comment }}b", json!({})).unwrap(), "ab");
    assert_eq!(render("{% for x in xs %}{{ x|upper }}{% endfor %}", json!({"xs": ["a", "b"]})).unwrap(), "AB");
}

#[test]
fn hyphenated_names_and_unescaped_forms() {
    let out = render("{{object-entity}} {{{a}}} {{& a}}", json!({"object-entity": true, "a": "<b>&"}));
    assert_eq!(out.unwrap(), "true <b>& <b>&");
    let out = render("{{#rels}}{{object-entity}};{{/rels}}", json!({"rels": [{"object-entity": false}]}));
    assert_eq!(out.unwrap(), "false;");
}

#[test]
fn dot_on_a_map_is_an_error() {
    let err = render("{{#items}}{{.}}{{/items}}", json!({"items": [{"a": 1}]})).unwrap_err();
    assert!(matches!(&err, TemplateError::Render { message, .. } if message.contains("scalar")), "{err:?}");
}

#[test]
fn values_render_as_json_and_text_is_kept_exactly() {
    let out = render(
        "{{ m }} {{ l }} {{ n }} {{ b }} {{ f }}\n",
        json!({"m": {"x": "é\"", "y": [1, 2]}, "l": [], "n": null, "b": false, "f": 1.5}),
    );
    assert_eq!(out.unwrap(), "{\"x\": \"é\\\"\", \"y\": [1, 2]} [] null false 1.5\n");
    assert_eq!(render("<b>{{ s }}</b>\n\n", json!({"s": "a & b <c>"})).unwrap(), "<b>a & b <c></b>\n\n");
}

#[test]
fn syntax_error_reports_line_and_column() {
    let err = Template::compile(Part::System, "ok\nbad {{ x + }}").unwrap_err();
    match err {
        TemplateError::Syntax { part: Part::System, line: 2, column, .. } => assert!(column > 1),
        other => panic!("{other:?}"),
    }
}

#[test]
fn variables_lists_what_the_template_reads() {
    let t = Template::compile(
        Part::Template,
        "{{text}} {{#items}}{{name}}{{/items}} {{object-entity}} {% for f in fields %}{{ f }}{% endfor %}",
    )
    .unwrap();
    let names: Vec<String> = t.variables().into_iter().collect();
    assert_eq!(names, ["fields", "items", "object-entity", "text"]);
}

#[test]
fn render_prompt_renders_both_parts_and_merge_layers_override() {
    let terms = vars(json!({"lang": "English", "text": "term"}));
    let input = vars(json!({"text": "input"}));
    let merged = merge(&[&terms, &input]);
    let out = render_prompt(Some("Answer in {{lang}}."), "{{text}}", &merged).unwrap();
    assert_eq!(out, RenderedPrompt { system: Some("Answer in English.".into()), user: "input".into() });
    let err = render_prompt(Some("{{missing}}"), "x", &merged).unwrap_err();
    assert!(matches!(err, TemplateError::Undefined { part: Part::System, .. }));
}

#[test]
fn deeply_nested_variables_are_refused_not_overflowed() {
    let mut value = json!("leaf");
    for _ in 0..(MAX_VALUE_DEPTH + 5) {
        value = json!([value]);
    }
    let err = render("{{ deep }}", json!({"deep": value})).unwrap_err();
    assert!(matches!(&err, TemplateError::Variable { name, .. } if name == "deep"), "{err:?}");
}

#[test]
fn odd_inputs_never_panic() {
    for src in
        ["{{", "{%", "{#", "{{{", "{{{x}}", "{{#}}", "{{^ }}", "}}{{/", "{{!", "{% raw %}", "{{ '", "é{{é}}", "{{#a.}}"]
    {
        let _ = render(src, json!({"a": 1}));
    }
}

proptest::proptest! {
    #[test]
    fn any_template_text_compiles_or_errs_without_panicking(
        parts in proptest::collection::vec(proptest::sample::select(vec![
            "{{", "}}", "{%", "%}", "{#", "#}", "{{{", "}}}", "#", "^", "/", "!", ".", "&", "é", "\n", "\r\n", " ",
            "a", "a.b", "-", "'", "\"", "raw", "endraw", "items",
        ]), 0..40)
    ) {
        let src: String = parts.concat();
        if let Ok(template) = Template::compile(Part::Template, &src) {
            let _ = template.render(&vars(json!({"a": [{"b": 1}, "x"], "items": [], "raw": true})));
            let _ = template.variables();
        }
    }
}

#[test]
fn deep_nesting_in_a_template_is_an_error_not_a_stack_overflow() {
    let n = 10_000;
    let sections = format!("{}x{}", "{{#a}}".repeat(n), "{{/a}}".repeat(n));
    assert!(render(&sections, json!({"a": true})).is_err());
    let parens = format!("{{{{ {}1{} }}}}", "(".repeat(n), ")".repeat(n));
    assert!(render(&parens, json!({})).is_err());
    let ifs = format!("{}x{}", "{% if true %}".repeat(n), "{% endif %}".repeat(n));
    assert!(render(&ifs, json!({})).is_err());
}

#[test]
fn a_template_that_would_loop_for_ever_stops_at_the_bound_of_steps() {
    let loops = "a\n{% for a in range(100000) %}{% for b in range(100000) %}{% for c in range(100000) %}{{ a }}\
                 {% endfor %}{% endfor %}{% endfor %}";
    let error = render(loops, json!({})).unwrap_err();
    let stopped = format!("template line 2: did not finish within {RENDER_FUEL} steps");
    assert!(error.to_string().starts_with(&stopped), "{error}");
    // A loop over 100,000 items fits in the bound.
    let items: Vec<_> = (0..100_000).map(|i| json!({"name": format!("n{i}"), "value": i})).collect();
    let rendered =
        render("{% for item in items %}{{ item.name }}={{ item.value }};{% endfor %}", json!({"items": items}));
    assert!(rendered.unwrap().ends_with("n99999=99999;"));
}
