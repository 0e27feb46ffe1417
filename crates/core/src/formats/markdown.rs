//! An artifact's "Open questions" section.

use crate::model::{Question, Status};

pub fn render(questions: &[Question]) -> String {
    if questions.is_empty() {
        return "## Open questions\n\nNone.\n".to_string();
    }
    let mut out = String::from("## Open questions\n\n");
    for q in questions {
        let mut line = format!("- **#{}", q.id);
        if let Some(h) = q.header.as_deref().or(q.group_name.as_deref()) {
            line.push_str(&format!(" {}", inline(h)));
        }
        line.push_str(&format!("** {}", inline(&q.question)));
        line.push_str(if q.required {
            " _(required)_"
        } else {
            " _(optional)_"
        });
        out.push_str(&line);
        out.push('\n');
        if let Some(c) = &q.context {
            out.push_str(&format!("  - Context: {}\n", inline(c)));
        }
        for o in &q.options {
            let mut opt = format!("  - [ ] {}", inline(&o.label));
            if o.recommended {
                opt.push_str(" (Recommended)");
            }
            if let Some(d) = o.description.as_deref().filter(|d| !d.is_empty()) {
                opt.push_str(&format!(" — {}", inline(d)));
            }
            out.push_str(&opt);
            out.push('\n');
        }
        if let Some(p) = &q.proposed {
            out.push_str(&format!("  - Proposed: {}\n", inline(p)));
        }
        if q.state.status == Status::Answered {
            if let Some(a) = &q.state.answer {
                out.push_str(&format!("  - Answer: {}\n", inline(a)));
            }
        }
    }
    out
}

/// One line, with no escape sequence or control character: agent text must not break
/// the list or a terminal it is shown in.
fn inline(text: &str) -> String {
    super::sanitize(text, false)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
