//! The AWS shared configuration files (`~/.aws/credentials` and `~/.aws/config`), read the way
//! the AWS SDKs read them: INI sections, `[name]` in the credentials file, `[profile name]` (or
//! `[default]`) in the config file, the credentials file winning for a key set in both.

use std::collections::BTreeMap;
use std::io::Read;

use crate::ai::providers::environment::Environment;

/// Larger files are not AWS configuration; reading stops there instead of loading them whole.
const MAX_FILE_LEN: u64 = 1024 * 1024;

/// One profile's keys (`aws_access_key_id`, `region`, `role_arn`, ...).
pub(crate) type Profile = BTreeMap<String, String>;

/// Which file a text comes from: section names differ between the two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// `~/.aws/config`: `[default]` and `[profile name]`.
    Config,
    /// `~/.aws/credentials`: `[name]`.
    Credentials,
}

/// The profiles of one file's text. Comments (`#`, `;` at the start or after whitespace) and
/// indented sub-properties (`s3 =` followed by indented lines) are skipped; sections that are
/// not profiles (`[sso-session x]`, `[services x]`) are ignored.
pub(crate) fn parse(text: &str, kind: FileKind) -> BTreeMap<String, Profile> {
    let mut profiles: BTreeMap<String, Profile> = BTreeMap::new();
    let mut current: Option<String> = None;
    for raw_line in text.lines() {
        let indented = raw_line.starts_with([' ', '\t']);
        let line = strip_comment(raw_line).trim();
        if line.is_empty() {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = profile_name(section.trim(), kind);
            if let Some(name) = &current {
                profiles.entry(name.clone()).or_default();
            }
            continue;
        }
        // Indented lines continue a sub-property; no top-level key lives there.
        if indented {
            continue;
        }
        let (Some(name), Some((key, value))) = (&current, line.split_once('=')) else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() {
            continue;
        }
        if let Some(profile) = profiles.get_mut(name) {
            profile.insert(key.to_owned(), value.to_owned());
        }
    }
    profiles
}

fn strip_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    for (index, &byte) in bytes.iter().enumerate() {
        if (byte == b'#' || byte == b';') && (index == 0 || bytes[index - 1].is_ascii_whitespace())
        {
            return &line[..index];
        }
    }
    line
}

fn profile_name(section: &str, kind: FileKind) -> Option<String> {
    match kind {
        FileKind::Credentials => Some(section.to_owned()),
        FileKind::Config => {
            if section == "default" {
                return Some(section.to_owned());
            }
            let rest = section.strip_prefix("profile")?;
            if !rest.starts_with([' ', '\t']) {
                return None;
            }
            Some(rest.trim().to_owned())
        }
    }
}

/// The path of a shared file: the variable's value (with `~/` expanded), else `~/.aws/<name>`.
fn file_path(env: &Environment, variable: &str, default_name: &str) -> Option<std::path::PathBuf> {
    let home = env
        .var("HOME")
        .or_else(|| env.var("USERPROFILE"))
        .map(std::path::PathBuf::from);
    match env.var(variable) {
        Some(path) => match path.strip_prefix("~/") {
            Some(rest) => home.map(|home| home.join(rest)),
            None => Some(path.into()),
        },
        None => home.map(|home| home.join(".aws").join(default_name)),
    }
}

fn read_capped(path: &std::path::Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    file.take(MAX_FILE_LEN).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The merged profile `name` from the config and credentials files the environment points at
/// (`AWS_CONFIG_FILE`, `AWS_SHARED_CREDENTIALS_FILE`, else under `~/.aws/`). Missing or
/// unreadable files count as empty; `None` when neither file has the profile.
pub(crate) fn load_profile(env: &Environment, name: &str) -> Option<Profile> {
    let mut merged: Option<Profile> = None;
    let sources = [
        ("AWS_CONFIG_FILE", "config", FileKind::Config),
        (
            "AWS_SHARED_CREDENTIALS_FILE",
            "credentials",
            FileKind::Credentials,
        ),
    ];
    // Config first, then credentials on top: the credentials file wins.
    for (variable, default_name, kind) in sources {
        let Some(text) = file_path(env, variable, default_name).and_then(|p| read_capped(&p))
        else {
            continue;
        };
        if let Some(profile) = parse(&text, kind).remove(name) {
            merged.get_or_insert_with(Profile::new).extend(profile);
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_follow_each_files_rules() {
        let config = "\
[default]
region = eu-west-1 ; trailing comment
[profile work]
region=us-west-2
s3 =
  max_concurrent_requests = 20
output = json
[work-without-prefix]
region = ignored
[sso-session corp]
sso_region = us-east-1
# a comment
";
        let profiles = parse(config, FileKind::Config);
        assert_eq!(profiles["default"]["region"], "eu-west-1");
        assert_eq!(profiles["work"]["region"], "us-west-2");
        assert_eq!(profiles["work"]["output"], "json");
        assert!(!profiles["work"].contains_key("max_concurrent_requests"));
        assert_eq!(profiles.len(), 2, "{profiles:?}");

        let credentials = "[default]\naws_access_key_id = AKID\naws_secret_access_key=abc#def\n\
                           [profile x]\naws_access_key_id = Y\n";
        let profiles = parse(credentials, FileKind::Credentials);
        // `#` inside a value is not a comment.
        assert_eq!(profiles["default"]["aws_secret_access_key"], "abc#def");
        assert_eq!(profiles["profile x"]["aws_access_key_id"], "Y");
    }
}
