//! The api → provider registry and the trait every provider implements (pi's `api-registry.ts`).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, PoisonError, RwLock};

pub(crate) use super::api_provider::ApiProvider;

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

/// Removes every provider, the built-in ones included, and frees the table: for a host that
/// wants a clean exit under a leak checker (the C ABI's `pi_shutdown`). Streams opened after it
/// fail with "No API provider registered".
pub fn clear_api_providers() {
    *REGISTRY.write().unwrap_or_else(PoisonError::into_inner) = HashMap::new();
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
