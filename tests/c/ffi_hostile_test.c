/*
 * Issue 17 through the C API: array-shaped settings and options, nonsense faux options and tool
 * schemas are refused naming the field; a snapshot keeps no model or option header that may be
 * a secret; tool arguments deeper than the limit get an error result, never a cut value. All
 * offline (the faux provider).
 */
#include "test_support.h"

static void expect_refused(pi_error *err, const char *needle, int line) {
    if (err == NULL) {
        fprintf(stderr, "line %d: expected an error containing `%s`, got success\n", line, needle);
        exit(1);
    }
    pi_str msg = pi_error_message(err);
    if (pi_error_get_kind(err) != PI_ERROR_KIND_INVALID_JSON || !str_contains(msg, needle)) {
        fprintf(stderr, "line %d: expected INVALID_JSON containing `%s`, got kind %u: %.*s\n",
                line, needle, (unsigned)pi_error_get_kind(err), (int)msg.len, msg.data);
        exit(1);
    }
    pi_error_free(err);
}
#define REFUSED(call, needle) expect_refused((call), (needle), __LINE__)

static const char *ARRAY = "expected a JSON object, got an array";

static void test_arrays_are_not_objects(void) {
    pi_faux *faux = NULL;
    OK(pi_faux_new(&faux));
    pi_model *model = NULL;
    OK(pi_faux_model(faux, &model));
    pi_agent *agent = NULL;
    /* serde alone read ["high"] as {"thinkingLevel":"high"}. */
    REFUSED(pi_agent_new(model, "", "[\"high\"]", &agent), ARRAY);
    REFUSED(pi_agent_new(model, "", "{\"streamOptions\":[1]}", &agent), "`streamOptions`");
    CHECK(agent == NULL);
    pi_stream *stream = NULL;
    const char *context = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":0}]}";
    REFUSED(pi_stream_open(model, context, "[0.5, 10]", &stream), ARRAY);
    REFUSED(pi_stream_open(model, context, "{\"thinkingBudgets\":[1,2]}", &stream),
            "`thinkingBudgets`: expected a JSON object");
    CHECK(stream == NULL);
    pi_faux *other = NULL;
    REFUSED(pi_faux_new_with_options("[\"api\"]", &other), ARRAY);
    REFUSED(pi_faux_new_with_options("{\"tokenSize\":[1,2]}", &other), "`tokenSize`");
    REFUSED(pi_faux_new_with_options("{\"tokenSize\":{\"min\":5,\"max\":3}}", &other),
            "invalid faux option `tokenSize`");
    REFUSED(pi_faux_new_with_options("{\"tokensPerSecond\":-1}", &other),
            "invalid faux option `tokensPerSecond`");
    REFUSED(pi_faux_new_with_options("{\"models\":[\"a\",\"a\"]}", &other),
            "invalid faux option `models`");
    CHECK(other == NULL);
    pi_model *parsed = NULL;
    REFUSED(pi_model_from_json("[\"openai-completions\",\"x\"]", &parsed), ARRAY);
    CHECK(parsed == NULL);
    pi_model_free(model);
    pi_faux_free(faux);
}

static int32_t never_runs(void *user_data, pi_tool_call *call) {
    (void)user_data;
    OK(pi_tool_call_set_text(call, "ran"));
    return 0;
}

static void test_tool_schemas_must_be_schemas(void) {
    pi_faux *faux = NULL;
    OK(pi_faux_new(&faux));
    pi_model *model = NULL;
    OK(pi_faux_model(faux, &model));
    pi_agent *agent = NULL;
    OK(pi_agent_new(model, "", NULL, &agent));
    REFUSED(pi_agent_add_tool(agent, "t", "d", "5", never_runs, NULL, NULL),
            "parameters: a tool's parameters must be a JSON Schema object, not a number");
    REFUSED(pi_agent_add_tool(agent, "t", "d", "{\"type\":12}", never_runs, NULL, NULL),
            "parameters.type: must be a JSON type name");
    REFUSED(pi_agent_add_tool(agent, "t", "d",
                              "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"strin\"}}}",
                              never_runs, NULL, NULL),
            "parameters.properties.a.type");
    OK(pi_agent_add_tool(agent, "t", "d", "{\"type\":\"object\"}", never_runs, NULL, NULL));
    pi_agent_free(agent);
    pi_model_free(model);
    pi_faux_free(faux);
}

static void test_snapshots_keep_no_secret_header(void) {
    pi_faux *faux = NULL;
    OK(pi_faux_new_with_options("{\"api\":\"hostile-c-faux\"}", &faux));
    OK(pi_faux_push_json(faux, "\"one\""));
    pi_model *model = NULL;
    OK(pi_model_from_json(
        "{\"id\":\"faux-1\",\"name\":\"f\",\"api\":\"hostile-c-faux\",\"provider\":\"faux\","
        "\"baseUrl\":\"\",\"reasoning\":false,\"input\":[\"text\"],"
        "\"cost\":{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0},"
        "\"contextWindow\":1000,\"maxTokens\":100,"
        "\"headers\":{\"X-Auth-Key\":\"model-secret-c-1\",\"User-Agent\":\"pi-c\"}}",
        &model));
    pi_agent *agent = NULL;
    OK(pi_agent_new(model, "", "{\"streamOptions\":{\"headers\":{\"X-Custom-Auth\":\"opt-secret-c-2\"}}}",
                    &agent));
    OK(pi_agent_prompt(agent, "hi"));
    char *snapshot = NULL;
    OK(pi_agent_snapshot_json(agent, &snapshot));
    CHECK(strstr(snapshot, "model-secret-c-1") == NULL);
    CHECK(strstr(snapshot, "opt-secret-c-2") == NULL);
    CHECK(strstr(snapshot, "X-Auth-Key") == NULL);
    CHECK(strstr(snapshot, "\"User-Agent\":\"pi-c\"") != NULL);
    pi_string_free(snapshot);
    pi_agent_free(agent);
    pi_model_free(model);
    pi_faux_free(faux);
}

static atomic_int deep_runs;

static int32_t count_runs(void *user_data, pi_tool_call *call) {
    (void)user_data;
    atomic_fetch_add(&deep_runs, 1);
    OK(pi_tool_call_set_text(call, "ran"));
    return 0;
}

/* A faux tool call whose arguments nest `depth` containers: {"v":[[...1...]]}. */
static char *deep_call(int depth) {
    size_t size = 200 + 2 * (size_t)depth;
    char *json = malloc(size);
    CHECK(json != NULL);
    size_t at = (size_t)snprintf(json, size,
                                 "{\"content\":[{\"type\":\"toolCall\",\"id\":\"c1\",\"name\":\"deep\","
                                 "\"arguments\":{\"v\":");
    for (int i = 1; i < depth; i++) json[at++] = '[';
    json[at++] = '1';
    for (int i = 1; i < depth; i++) json[at++] = ']';
    snprintf(json + at, size - at, "}}]}");
    return json;
}

static void test_deep_arguments_get_an_error_result(void) {
    int depths[] = {64, 100};
    for (int i = 0; i < 2; i++) {
        pi_faux *faux = NULL;
        OK(pi_faux_new(&faux));
        char *call = deep_call(depths[i]);
        OK(pi_faux_push_json(faux, call));
        free(call);
        OK(pi_faux_push_json(faux, "\"done\""));
        pi_model *model = NULL;
        OK(pi_faux_model(faux, &model));
        pi_agent *agent = NULL;
        OK(pi_agent_new(model, "", NULL, &agent));
        OK(pi_agent_add_tool(agent, "deep", "d", "{\"type\":\"object\"}", count_runs, NULL, NULL));
        atomic_store(&deep_runs, 0);
        OK(pi_agent_prompt(agent, "go"));
        char *messages = NULL;
        OK(pi_agent_messages_json(agent, &messages));
        if (depths[i] <= 64) {
            CHECK(atomic_load(&deep_runs) == 1);
            CHECK(strstr(messages, "\"isError\":false") != NULL);
        } else {
            CHECK(atomic_load(&deep_runs) == 0);
            CHECK(strstr(messages, "\"isError\":true") != NULL);
            CHECK(strstr(messages, "nested more than 64 levels deep") != NULL);
        }
        pi_string_free(messages);
        pi_agent_free(agent);
        pi_model_free(model);
        pi_faux_free(faux);
    }
}

/* Streams once from `api` at `base_url` with model id `id`; returns the final message JSON. */
static char *stream_once(const char *api, const char *base_url, const char *id) {
    char model_json[1024];
    snprintf(model_json, sizeof model_json,
             "{\"id\":\"%s\",\"name\":\"m\",\"api\":\"%s\",\"provider\":\"mock\","
             "\"baseUrl\":\"%s\",\"reasoning\":false,\"input\":[\"text\"],"
             "\"cost\":{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0},"
             "\"contextWindow\":1000,\"maxTokens\":100}",
             id, api, base_url);
    pi_model *model = NULL;
    OK(pi_model_from_json(model_json, &model));
    pi_stream *stream = NULL;
    OK(pi_stream_open(model,
                      "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":0}]}",
                      "{\"apiKey\":\"c-hostile-key-123\",\"maxRetries\":0}", &stream));
    char *json = NULL;
    OK(pi_stream_result_json(stream, &json));
    pi_stream_free(stream);
    pi_model_free(model);
    return json;
}

/* Against the mock server (the Rust harness scripts the replies and checks the paths). */
static void mock(const char *base_url) {
    /* 1: a path-hostile id on google-generative-ai stays one encoded segment. */
    char *json = stream_once("google-generative-ai", base_url, "../../../admin/delete?all=1#");
    CHECK(strstr(json, "\"stopReason\":\"stop\"") != NULL);
    pi_string_free(json);
    /* 2: a lone surrogate escape on openai-responses costs one character. */
    json = stream_once("openai-responses", base_url, "m");
    CHECK(strstr(json, "\"stopReason\":\"stop\"") != NULL);
    CHECK(strstr(json, "h\xef\xbf\xbdi") != NULL); /* U+FFFD in UTF-8 */
    pi_string_free(json);
    printf("ffi_hostile_test mock: ok\n");
}

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "mock") == 0) {
        mock(argv[2]);
        return 0;
    }
    test_arrays_are_not_objects();
    test_tool_schemas_must_be_schemas();
    test_snapshots_keep_no_secret_header();
    test_deep_arguments_get_an_error_result();
    printf("ffi_hostile_test: ok\n");
    return 0;
}
