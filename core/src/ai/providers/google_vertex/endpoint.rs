//! Where a Vertex request goes and how it authenticates, as pi's `google-vertex.ts` configures
//! the `@google/genai` SDK (`vertexai: true`, API version `v1`).
//!
//! - **API key** (Vertex "express mode"): the request's key, else `GOOGLE_CLOUD_API_KEY`, unless
//!   it is a placeholder (`<...>`, or `gcp-vertex-credentials`). URL
//!   `https://aiplatform.googleapis.com/v1/publishers/google/models/{id}:streamGenerateContent`.
//! - **Application Default Credentials** with a project (`project` option, else
//!   `GOOGLE_CLOUD_PROJECT`, else `GCLOUD_PROJECT`) and a location (`location` option, else
//!   `GOOGLE_CLOUD_LOCATION`). URL `https://{location}-aiplatform.googleapis.com/v1/projects/
//!   {project}/locations/{location}/publishers/google/models/{id}:streamGenerateContent`, with
//!   `global` on `aiplatform.googleapis.com` and the multi-regions `us`/`eu` on
//!   `aiplatform.{location}.rep.googleapis.com`.
//! - A **custom base URL** (a model whose `baseUrl` is not the catalog's `{location}` template)
//!   replaces the host and takes the model path directly (the SDK's `ResourceScope.COLLECTION`:
//!   no `projects/…/locations/…`), with `/v1` added unless the URL already names a version.
//!
//! Every URL ends in `?alt=sse`.

use super::super::environment::Environment;
use super::super::http;
use crate::ai::error::ProviderError;
use crate::ai::model::Model;
use crate::ai::options::{ApiKey, StreamOptions};

/// The API version the SDK is configured with.
pub(crate) const API_VERSION: &str = "v1";

/// The value pi's tooling stores in place of a key when ADC is meant.
const CREDENTIALS_MARKER: &str = "gcp-vertex-credentials";

/// The Vertex multi-regions, served from `aiplatform.{location}.rep.googleapis.com`.
const MULTI_REGIONAL_LOCATIONS: [&str; 2] = ["us", "eu"];

/// What an ADC request lacks to be addressed (pi's words).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum EndpointError {
    /// Neither the `project` option nor `GOOGLE_CLOUD_PROJECT` / `GCLOUD_PROJECT`.
    #[error(
        "Vertex AI requires a project ID. Set GOOGLE_CLOUD_PROJECT/GCLOUD_PROJECT or pass project in options."
    )]
    NoProject,
    /// Neither the `location` option nor `GOOGLE_CLOUD_LOCATION`.
    #[error(
        "Vertex AI requires a location. Set GOOGLE_CLOUD_LOCATION or pass location in options."
    )]
    NoLocation,
}

impl From<EndpointError> for ProviderError {
    /// pi throws these as plain errors (no kind).
    fn from(error: EndpointError) -> Self {
        ProviderError::from(error.to_string())
    }
}

/// Where an API key came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeySource {
    /// The request's `apiKey`: sent wherever the request goes.
    Request,
    /// `GOOGLE_CLOUD_API_KEY`: only to Google's hosts (see `env_keys`).
    Environment,
}

/// The API key to use, if any (pi's `resolveApiKey`): placeholders mean "use ADC".
pub(crate) fn resolve_api_key(
    options: &StreamOptions,
    env: &Environment,
) -> Option<(ApiKey, KeySource)> {
    let request = options
        .api_key
        .as_ref()
        .map(|key| key.expose().trim().to_owned())
        .filter(|key| !key.is_empty())
        .map(|key| (key, KeySource::Request));
    let (key, source) = request.or_else(|| {
        env.var("GOOGLE_CLOUD_API_KEY")
            .map(|key| key.trim().to_owned())
            .filter(|key| !key.is_empty())
            .map(|key| (key, KeySource::Environment))
    })?;
    (!is_placeholder(&key)).then(|| (ApiKey::new(key), source))
}

/// `gcp-vertex-credentials`, or anything of the form `<...>` (pi's `<authenticated>` among
/// them).
fn is_placeholder(key: &str) -> bool {
    key == CREDENTIALS_MARKER
        || (key.len() > 2
            && key.starts_with('<')
            && key.ends_with('>')
            && !key[1..key.len() - 1].contains('>'))
}

/// The project for ADC (pi's `resolveProject`).
pub(crate) fn resolve_project(
    options: &StreamOptions,
    env: &Environment,
) -> Result<String, EndpointError> {
    non_empty(options.project.as_deref())
        .or_else(|| env.var("GOOGLE_CLOUD_PROJECT"))
        .or_else(|| env.var("GCLOUD_PROJECT"))
        .ok_or(EndpointError::NoProject)
}

/// The location for ADC (pi's `resolveLocation`).
pub(crate) fn resolve_location(
    options: &StreamOptions,
    env: &Environment,
) -> Result<String, EndpointError> {
    non_empty(options.location.as_deref())
        .or_else(|| env.var("GOOGLE_CLOUD_LOCATION"))
        .ok_or(EndpointError::NoLocation)
}

fn non_empty(value: Option<&str>) -> Option<String> {
    value.filter(|v| !v.is_empty()).map(str::to_owned)
}

/// The model's base URL if it is a custom one (pi's `resolveCustomBaseUrl`): the catalog's
/// `{location}` template and an empty URL are not.
pub(crate) fn custom_base_url(model: &Model) -> Option<&str> {
    let trimmed = model.base_url.trim();
    (!trimmed.is_empty() && !trimmed.contains("{location}")).then_some(trimmed)
}

/// Whether a path segment of `url` is an API version (`v1`, `v1beta`, `v1beta1`; pi's
/// `baseUrlIncludesApiVersion`).
fn includes_api_version(url: &str) -> bool {
    let path = match reqwest::Url::parse(url) {
        Ok(parsed) => parsed.path().to_owned(),
        Err(_) => url.to_owned(),
    };
    path.split('/').any(is_version_segment)
}

fn is_version_segment(segment: &str) -> bool {
    let Some(rest) = segment.strip_prefix('v') else {
        return false;
    };
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return false;
    }
    let rest = &rest[digits..];
    match rest.strip_prefix("beta") {
        Some(after) => after.chars().all(|c| c.is_ascii_digit()),
        None => rest.is_empty(),
    }
}

/// The model's resource path (the SDK's `tModel` for Vertex): `publishers/google/models/{id}`,
/// `publishers/{p}/models/{m}` for `p/m`, and ids already qualified kept as they are. Every
/// part is an encoded path segment (issue 17), so no id leaves the collection it names.
fn model_path(id: &str) -> Result<String, ProviderError> {
    const WHAT: &str = "model id";
    if id.starts_with("publishers/") || id.starts_with("projects/") || id.starts_with("models/") {
        http::path_segments(WHAT, id)
    } else if let Some((publisher, model)) = id.split_once('/') {
        let model = model.split('/').next().unwrap_or(model);
        Ok(format!(
            "publishers/{}/models/{}",
            http::path_segment(WHAT, publisher)?,
            http::path_segment(WHAT, model)?
        ))
    } else {
        Ok(format!(
            "publishers/google/models/{}",
            http::path_segment(WHAT, id)?
        ))
    }
}

/// How the request is scoped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// An API key: no project in the path.
    ApiKey,
    /// ADC with a project and a location.
    Project {
        /// The project id.
        project: String,
        /// The location (`us-central1`, `global`, `us`, ...).
        location: String,
    },
}

/// The `streamGenerateContent` URL for `model` (see the module docs).
pub(crate) fn stream_url(model: &Model, scope: &Scope) -> Result<String, ProviderError> {
    let path = model_path(&model.id)?;
    let (base, version, prefix) = match (custom_base_url(model), scope) {
        (Some(custom), _) => {
            let version = if includes_api_version(custom) {
                ""
            } else {
                API_VERSION
            };
            (custom.trim_end_matches('/').to_owned(), version, None)
        }
        (None, Scope::ApiKey) => (
            "https://aiplatform.googleapis.com".to_owned(),
            API_VERSION,
            None,
        ),
        (None, Scope::Project { project, location }) => {
            let location = http::host_label("location", location)?;
            let project = http::path_segment("project", project)?;
            let host = if location == "global" {
                "https://aiplatform.googleapis.com".to_owned()
            } else if MULTI_REGIONAL_LOCATIONS.contains(&location) {
                format!("https://aiplatform.{location}.rep.googleapis.com")
            } else {
                format!("https://{location}-aiplatform.googleapis.com")
            };
            let prefix = (!path.starts_with("projects/"))
                .then(|| format!("projects/{project}/locations/{location}"));
            (host, API_VERSION, prefix)
        }
    };
    let mut url = base;
    for part in [Some(version), prefix.as_deref(), Some(path.as_str())]
        .into_iter()
        .flatten()
        .filter(|part| !part.is_empty())
    {
        url.push('/');
        url.push_str(part);
    }
    url.push_str(":streamGenerateContent?alt=sse");
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vertex(id: &str, base_url: &str) -> Model {
        Model::new("google-vertex", "google-vertex", id, base_url)
    }

    const CATALOG: &str = "https://{location}-aiplatform.googleapis.com";

    fn project(location: &str) -> Scope {
        Scope::Project {
            project: "my-proj".into(),
            location: location.into(),
        }
    }

    #[test]
    fn urls_like_the_sdk() {
        let model = vertex("gemini-2.5-flash", CATALOG);
        assert_eq!(
            stream_url(&model, &project("us-central1")).unwrap(),
            "https://us-central1-aiplatform.googleapis.com/v1/projects/my-proj/locations/us-central1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            stream_url(&model, &project("global")).unwrap(),
            "https://aiplatform.googleapis.com/v1/projects/my-proj/locations/global/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            stream_url(&model, &project("eu")).unwrap(),
            "https://aiplatform.eu.rep.googleapis.com/v1/projects/my-proj/locations/eu/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            stream_url(&model, &Scope::ApiKey).unwrap(),
            "https://aiplatform.googleapis.com/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        // A custom base URL: the collection scope, `/v1` unless a version is there.
        let custom = vertex("gemini-2.5-flash", "http://127.0.0.1:9/v1/");
        for scope in [Scope::ApiKey, project("us-central1")] {
            assert_eq!(
                stream_url(&custom, &scope).unwrap(),
                "http://127.0.0.1:9/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
            );
        }
        let proxy = vertex("anthropic/claude-x", "https://proxy.example/vertex");
        assert_eq!(
            stream_url(&proxy, &Scope::ApiKey).unwrap(),
            "https://proxy.example/vertex/v1/publishers/anthropic/models/claude-x:streamGenerateContent?alt=sse"
        );
        // Issue 17: no id, project or location leaves its place in the URL.
        let hostile = vertex("admin?all=1#", "http://127.0.0.1:9/v1");
        assert_eq!(
            stream_url(&hostile, &Scope::ApiKey).unwrap(),
            "http://127.0.0.1:9/v1/publishers/google/models/admin%3Fall%3D1%23:streamGenerateContent?alt=sse"
        );
        let publisher = vertex("x y/a?b#", "http://127.0.0.1:9/v1");
        assert_eq!(
            stream_url(&publisher, &Scope::ApiKey).unwrap(),
            "http://127.0.0.1:9/v1/publishers/x%20y/models/a%3Fb%23:streamGenerateContent?alt=sse"
        );
        assert!(
            stream_url(
                &vertex("../../../admin/delete?all=1#", CATALOG),
                &Scope::ApiKey
            )
            .is_err()
        );
        assert!(stream_url(&vertex("../x", CATALOG), &Scope::ApiKey).is_err());
        assert!(stream_url(&vertex("projects/../x", CATALOG), &Scope::ApiKey).is_err());
        let evil_location = Scope::Project {
            project: "p".into(),
            location: "evil.example/x".into(),
        };
        assert!(stream_url(&model, &evil_location).is_err());
        let odd_project = Scope::Project {
            project: "a/../b?".into(),
            location: "us-central1".into(),
        };
        assert!(
            stream_url(&model, &odd_project)
                .unwrap()
                .contains("/projects/a%2F..%2Fb%3F/locations/us-central1/")
        );
        let qualified = vertex("projects/p/locations/l/endpoints/e", CATALOG);
        assert_eq!(
            stream_url(&qualified, &project("l")).unwrap(),
            "https://l-aiplatform.googleapis.com/v1/projects/p/locations/l/endpoints/e:streamGenerateContent?alt=sse"
        );
    }

    #[test]
    fn versions_in_custom_urls() {
        for (url, has) in [
            ("https://x/v1", true),
            ("https://x/api/v1beta1/", true),
            ("https://x/v1beta", true),
            ("https://x/vertex", false),
            ("https://x/v", false),
            ("https://x/v1alpha", false),
            ("not a url/v2/x", true),
        ] {
            assert_eq!(includes_api_version(url), has, "{url}");
        }
    }

    #[test]
    fn keys_placeholders_project_and_location() {
        let env = Environment::fixed([
            ("GOOGLE_CLOUD_API_KEY", " env-key "),
            ("GCLOUD_PROJECT", "from-gcloud"),
        ]);
        let mut options = StreamOptions::default();
        assert_eq!(
            resolve_api_key(&options, &env).map(|(k, source)| (k.expose().to_owned(), source)),
            Some(("env-key".into(), KeySource::Environment))
        );
        for placeholder in ["<authenticated>", "gcp-vertex-credentials", "<your key>"] {
            options.api_key = Some(ApiKey::new(placeholder));
            assert_eq!(resolve_api_key(&options, &env), None, "{placeholder}");
        }
        options.api_key = Some(ApiKey::new("mine"));
        let (key, source) = resolve_api_key(&options, &env).unwrap();
        assert_eq!((key.expose(), source), ("mine", KeySource::Request));
        assert_eq!(resolve_project(&options, &env).unwrap(), "from-gcloud");
        assert_eq!(
            resolve_location(&options, &env).unwrap_err(),
            EndpointError::NoLocation
        );
        options.project = Some("p".into());
        options.location = Some("europe-west4".into());
        assert_eq!(resolve_project(&options, &env).unwrap(), "p");
        assert_eq!(resolve_location(&options, &env).unwrap(), "europe-west4");
        let empty = Environment::fixed::<&str, &str>([]);
        assert_eq!(
            resolve_project(&StreamOptions::default(), &empty).unwrap_err(),
            EndpointError::NoProject
        );
    }
}
