//! The api → provider registry and the trait every provider implements (pi's `api-registry.ts`).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, PoisonError, RwLock};

use super::event_stream::AssistantMessageEventStream;
use super::model::Model;
use super::options::StreamOptions;
use super::types::Context;

/// A wire protocol implementation.
///
/// Contract: [`stream`](Self::stream) returns at once and never fails; request, network, decode
/// and abort failures end the returned stream with an `error` event that carries the partial
/// message. It is called from inside a tokio runtime and may spawn tasks on it.
pub trait ApiProvider: Send + Sync {
    /// The api id this provider serves (`openai-completions`, ...).
    fn api(&self) -> &str;

    /// Starts a request and returns its event stream.
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream;
}

type Registry = RwLock<HashMap<String, Arc<dyn ApiProvider>>>;

static REGISTRY: LazyLock<Registry> = LazyLock::new(|| {
    let mut providers: HashMap<String, Arc<dyn ApiProvider>> = HashMap::new();
    for provider in super::providers::builtins() {
        providers.insert(provider.api().to_owned(), provider);
    }
    RwLock::new(providers)
});

/// Registers `provider` for its api, replacing any provider registered for the same api.
pub fn register_api_provider(provider: Arc<dyn ApiProvider>) {
    REGISTRY
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(provider.api().to_owned(), provider);
}

/// Removes the provider for `api`; returns whether one was registered.
pub fn unregister_api_provider(api: &str) -> bool {
    REGISTRY
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(api)
        .is_some()
}

/// The provider registered for `api`.
pub fn get_api_provider(api: &str) -> Option<Arc<dyn ApiProvider>> {
    REGISTRY
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(api)
        .cloned()
}

/// The apis that have a provider, sorted.
pub fn get_api_providers() -> Vec<String> {
    let mut apis: Vec<String> = REGISTRY
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .keys()
        .cloned()
        .collect();
    apis.sort();
    apis
}
