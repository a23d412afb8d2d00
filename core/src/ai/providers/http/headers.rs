//! The request headers a provider prepares: in order, one value per name.

/// Request headers in order; setting a name again (in any case) replaces the header where it
/// stands, in the later spelling (as pi's `mergeHeaders`: the last writer's name and value).
/// (No `Debug`: it holds the key.)
#[derive(Default)]
pub(crate) struct Headers(pub(crate) Vec<(String, String)>);

impl Headers {
    /// `Content-Type: application/json`, then `Accept: accept` when given.
    pub(crate) fn json(accept: Option<&str>) -> Self {
        let mut headers = Self::default();
        headers.set("content-type", "application/json");
        if let Some(accept) = accept {
            headers.set("accept", accept);
        }
        headers
    }

    /// Sets `name` (replacing any header of that name in any case).
    pub(crate) fn set(&mut self, name: impl Into<String>, value: impl Into<String>) {
        let name = name.into();
        let value = value.into();
        match self
            .0
            .iter_mut()
            .find(|(existing, _)| existing.eq_ignore_ascii_case(&name))
        {
            Some(slot) => *slot = (name, value),
            None => self.0.push((name, value)),
        }
    }

    /// Sets every header of `headers`, in order.
    pub(crate) fn extend<'a>(
        &mut self,
        headers: impl IntoIterator<Item = (&'a String, &'a String)>,
    ) {
        for (name, value) in headers {
            self.set(name.clone(), value.clone());
        }
    }

    /// Whether `name` is set (in any case).
    pub(crate) fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The value of `name`, if set.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(existing, _)| existing.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The headers, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_replace_case_insensitively() {
        let mut headers = Headers::default();
        headers.set("Authorization", "Bearer a");
        headers.set("x-one", "1");
        headers.set("authorization", "Bearer b");
        assert_eq!(
            headers.0,
            [
                ("authorization".to_owned(), "Bearer b".to_owned()),
                ("x-one".to_owned(), "1".to_owned())
            ]
        );
        assert!(headers.has("X-ONE"));
        assert_eq!(headers.get("x-two"), None);
    }
}
