//! JSON text for the structured values the binding hands over (device facts, pool
//! statistics, diagnostics). The JS layer parses it with the `JSON.parse` it took at
//! load time, which defines own data properties: no setter a program put on
//! `Object.prototype` or `Array.prototype` can intercept or drop a field, as it could
//! when Node-API assigns the properties of an object it builds.

/// A JSON string literal.
pub fn string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON number (integers as integers; JSON has no NaN or infinities: they become 0).
pub fn number(value: f64) -> String {
    if value.is_finite() {
        format!("{value}")
    } else {
        "0".to_string()
    }
}

/// A JSON object of `(name, JSON value)` pairs.
pub fn object(fields: &[(&str, String)]) -> String {
    let body: Vec<String> = fields.iter().map(|(name, value)| format!("{}:{value}", string(name))).collect();
    format!("{{{}}}", body.join(","))
}

/// A JSON array of JSON values.
pub fn array(items: impl IntoIterator<Item = String>) -> String {
    format!("[{}]", items.into_iter().collect::<Vec<_>>().join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_numbers_objects_and_arrays_are_valid_json() {
        assert_eq!(string("a\"b\\c\nd"), r#""a\"b\\c\u000ad""#);
        assert_eq!(number(5.0), "5");
        assert_eq!(number(1.5), "1.5");
        assert_eq!(number(f64::NAN), "0");
        assert_eq!(object(&[("n", number(2.0)), ("s", string("x"))]), r#"{"n":2,"s":"x"}"#);
        assert_eq!(array([string("a"), number(1.0)]), r#"["a",1]"#);
        assert_eq!(array(Vec::<String>::new()), "[]");
    }
}
