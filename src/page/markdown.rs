//! A question's context as the Markdown agents write it: emphasis, code, lists, quotes and
//! tables, rendered by pulldown-cmark. Nothing in it may load or run anything: raw HTML is
//! shown as text, an image as its description, a link as its text (the address only in a
//! tooltip), so the page's Content-Security-Policy needs no change.

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd};

/// The safe HTML of `text`.
pub(super) fn render(text: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let events = Parser::new_ext(text, options).filter_map(inert);
    let mut out = String::with_capacity(text.len() + text.len() / 2 + 16);
    pulldown_cmark::html::push_html(&mut out, events);
    out
}

/// The event as it may be written. `Event::Html` is written as it is, so it is made here
/// only from fixed markup or escaped text.
fn inert(event: Event<'_>) -> Option<Event<'_>> {
    Some(match event {
        // Raw HTML from the ledger: its characters, escaped by the writer.
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(Tag::HtmlBlock) => Event::Html(CowStr::Borrowed("<p class=\"raw\">")),
        Event::End(TagEnd::HtmlBlock) => Event::Html(CowStr::Borrowed("</p>")),
        // A link loads nothing: its text, with the address to read in a tooltip.
        Event::Start(Tag::Link { dest_url, .. }) => Event::Html(CowStr::from(format!(
            "<span class=\"link\" title=\"{}\">",
            super::esc(&dest_url)
        ))),
        Event::End(TagEnd::Link) => Event::Html(CowStr::Borrowed("</span>")),
        // An image is not fetched: its description stands in for it.
        Event::Start(Tag::Image { .. }) => Event::Html(CowStr::Borrowed("<span class=\"image\">")),
        Event::End(TagEnd::Image) => Event::Html(CowStr::Borrowed("</span>")),
        // Headings inside a question's context stay below the question's own.
        Event::Start(Tag::Heading { .. }) => {
            Event::Html(CowStr::Borrowed("<p class=\"heading\"><strong>"))
        }
        Event::End(TagEnd::Heading(_)) => Event::Html(CowStr::Borrowed("</strong></p>\n")),
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn markdown_is_rendered() {
        let html = render("**bold** and `code`\n\n- one\n- two\n\n```\nlet x = 1;\n```\n");
        assert!(html.contains("<strong>bold</strong>"), "{html}");
        assert!(html.contains("<code>code</code>"), "{html}");
        assert!(html.contains("<li>one</li>"), "{html}");
        assert!(
            html.contains("<pre><code>let x = 1;\n</code></pre>"),
            "{html}"
        );
    }

    #[test]
    fn nothing_can_load_or_run() {
        let html = render(
            "<script>alert(1)</script>\n\nsee <img src=x onerror=alert(2)> and \
             ![logo](http://example.test/a.png) and [click](javascript:alert(3)) \
             <a href=\"javascript:alert(4)\">x</a>\n\n# Title <b>x</b>",
        );
        // Every tag is one of the few this writes; the rest is escaped text.
        let allowed = ["p", "/p", "span", "/span", "strong", "/strong"];
        for tag in html.split('<').skip(1) {
            let name = tag.split([' ', '>']).next().unwrap();
            assert!(allowed.contains(&name), "<{name} in {html}");
        }
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(html.contains("<span class=\"image\">logo</span>"), "{html}");
        assert!(
            html.contains("<span class=\"link\" title=\"javascript:alert(3)\">click</span>"),
            "{html}"
        );
        assert!(
            html.contains("<p class=\"heading\"><strong>Title &lt;b&gt;x"),
            "{html}"
        );
    }
}
