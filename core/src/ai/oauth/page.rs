//! The small HTML pages the localhost callback server shows in the browser.

/// A page saying the login finished.
pub(crate) fn success_page(message: &str) -> String {
    page("Authentication successful", message, None)
}

/// A page saying the login failed, with optional details.
pub(crate) fn error_page(message: &str, details: Option<&str>) -> String {
    page("Authentication failed", message, details)
}

fn page(heading: &str, message: &str, details: Option<&str>) -> String {
    let details = details
        .map(|d| format!("\n<pre>{}</pre>", escape(d)))
        .unwrap_or_default();
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>{heading}</title>\
         <style>body{{font-family:system-ui,sans-serif;background:#09090b;color:#fafafa;\
         text-align:center;padding:4em 1em}}p,pre{{color:#a1a1aa}}</style></head>\n\
         <body>\n<h1>{heading}</h1>\n<p>{}</p>{details}\n</body>\n</html>\n",
        escape(message),
        heading = escape(heading),
    )
}

/// HTML-escapes text (a query parameter may be echoed back in the details).
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_are_escaped() {
        let html = error_page("Failed.", Some("Error: <script>\"x\"</script>"));
        assert!(html.contains("Error: &lt;script&gt;&quot;x&quot;&lt;/script&gt;"));
        assert!(!html.contains("<script>"));
    }
}
