//! The trait every provider implements: what a wire protocol must do (a leaf: the providers
//! implement it, and the registry holds them, without either importing the other back).

use super::event_stream::AssistantMessageEventStream;
use super::model::Model;
use super::options::StreamOptions;
use super::simple_options::{base_options, clamped_level};
use super::types::Context;

/// A wire protocol implementation.
///
/// Contract: [`stream`](Self::stream) returns at once and never fails; request, network, decode
/// and abort failures end the returned stream with an `error` event that carries the partial
/// message. It is called from inside a tokio runtime and may spawn tasks on it.
pub trait ApiProvider: Send + Sync {
    /// The api id this provider serves (`openai-completions`, ...).
    fn api(&self) -> &str;

    /// Starts a request and returns its event stream. Sends what the options' provider keys
    /// say and nothing more (pi's `stream`).
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream;

    /// The options pi's `streamSimple` sends: the api-independent `reasoning` level mapped
    /// onto this api's keys. The default applies the shared defaults (`maxTokens` defaulting to
    /// `min(model.maxTokens, 32000)`) and leaves `reasoning` clamped to a level the model
    /// supports (`None` for a model without reasoning), for providers that read `reasoning`
    /// themselves.
    fn simple_options(&self, model: &Model, options: &StreamOptions) -> StreamOptions {
        let mut simple = base_options(model, options);
        simple.reasoning = clamped_level(model, options.reasoning).filter(|_| model.reasoning);
        simple
    }

    /// pi's `streamSimple`: [`stream`](Self::stream) with
    /// [`simple_options`](Self::simple_options).
    fn stream_simple(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        self.stream(model, context, &self.simple_options(model, options))
    }
}
