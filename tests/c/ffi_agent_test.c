/*
 * C test of the agent parts of the pi-agent C API, run by ffi/tests/c_programs.rs (natively and
 * under valgrind), all offline on the faux provider: the model catalog, option objects, tool
 * execution order, steering and follow-up queues, continue and abort, the four hooks, tool
 * progress updates, snapshots, and custom messages.
 *
 *   ffi_agent_test
 *
 * Exits 0 when every check passed; on the first failed check it prints it and exits 1.
 */
#define _POSIX_C_SOURCE 200809L

#include "test_support.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A scripted tool call block, for faux scripts. */
#define TOOL_CALL(id, name, args)                                                    \
    "{\"type\":\"toolCall\",\"id\":\"" id "\",\"name\":\"" name "\",\"arguments\":" args \
    "}"

static const char *OBJECT_SCHEMA = "{\"type\":\"object\"}";

static atomic_int freed; /* free_user_data calls of count_free */

static void count_free(void *user_data) {
    (void)user_data;
    atomic_fetch_add(&freed, 1);
}

/* ------------------------------------------------------------ fixture */

typedef struct {
    pi_faux *faux;
    pi_model *model;
    pi_agent *agent;
} fixture;

/* A faux provider with `script` queued, and an agent on its model with `options_json`. */
static void setup(fixture *f, const char *script, const char *options_json) {
    OK(pi_faux_new(&f->faux));
    if (script != NULL) OK(pi_faux_push_json(f->faux, script));
    OK(pi_faux_model(f->faux, &f->model));
    OK(pi_agent_new(f->model, "", options_json, &f->agent));
}

static void teardown(fixture *f) {
    pi_agent_free(f->agent);
    pi_model_free(f->model);
    pi_faux_free(f->faux);
}

/* What the model was sent, one context per request (free it with pi_string_free). */
static char *contexts_json(pi_faux *faux) {
    char *json = NULL;
    OK(pi_faux_contexts_json(faux, &json));
    CHECK(json != NULL);
    return json;
}

/* ------------------------------------------------------------ tools */

/* Answers "echo:" followed by its arguments JSON. */
static int32_t echo_tool(void *user_data, pi_tool_call *call) {
    atomic_int *calls = user_data;
    if (calls != NULL) atomic_fetch_add(calls, 1);
    pi_str args = pi_tool_call_arguments_json(call);
    char text[256];
    snprintf(text, sizeof text, "echo:%.*s", (int)args.len, args.data);
    OK(pi_tool_call_set_text(call, text));
    return 0;
}

/* Two tools that show how calls of one batch overlap. With `wait_for_fast` (parallel runs),
 * "slow" waits until the end of "fast" was reported, and "fast" waits for "slow" to start;
 * else "slow" just sleeps a little. "fast" records whether "slow" was running meanwhile. */
typedef struct {
    pi_agent *agent;
    bool wait_for_fast;
    atomic_int slow_running;
    atomic_int fast_done;
    atomic_int overlapped;
    atomic_int pending_seen; /* both ids were in pi_agent_pending_tool_calls_json */
} pair_state;

static int32_t slow_tool(void *user_data, pi_tool_call *call) {
    pair_state *s = user_data;
    atomic_store(&s->slow_running, 1);
    if (s->wait_for_fast) {
        /* Until the agent has reported the end of "fast". */
        CHECK(wait_for(&s->fast_done));
        bool fast_pending = true;
        for (int i = 0; i < 10000 && fast_pending; i++) {
            char *pending = NULL;
            OK(pi_agent_pending_tool_calls_json(s->agent, &pending));
            fast_pending = strstr(pending, "\"f1\"") != NULL;
            pi_string_free(pending);
            if (fast_pending) sleep_ms(1);
        }
        CHECK(!fast_pending);
    } else {
        sleep_ms(50);
    }
    atomic_store(&s->slow_running, 0);
    OK(pi_tool_call_set_text(call, "slow done"));
    return 0;
}

static int32_t fast_tool(void *user_data, pi_tool_call *call) {
    pair_state *s = user_data;
    if (s->wait_for_fast) CHECK(wait_for(&s->slow_running));
    if (atomic_load(&s->slow_running)) atomic_store(&s->overlapped, 1);
    char *pending = NULL;
    OK(pi_agent_pending_tool_calls_json(s->agent, &pending));
    if (strstr(pending, "\"s1\"") != NULL && strstr(pending, "\"f1\"") != NULL) {
        atomic_store(&s->pending_seen, 1);
    }
    pi_string_free(pending);
    OK(pi_tool_call_set_text(call, "fast done"));
    atomic_store(&s->fast_done, 1);
    return 0;
}

/* ------------------------------------------------------------ event log */

typedef struct {
    pthread_mutex_t lock;
    char log[8192]; /* "kind:detail " entries; message updates are left out */
    pi_agent *agent;
    atomic_int saw_streaming; /* pi_agent_streaming_message_json during an update */
    atomic_int updates;       /* tool_execution_update events */
    atomic_int update_text;   /* updates with "25%" text */
    atomic_int update_details; /* updates with "50%" text and details */
} recorder;

static const char *event_name(pi_agent_event_kind kind) {
    switch (kind) {
    case PI_AGENT_EVENT_KIND_AGENT_START: return "agent_start";
    case PI_AGENT_EVENT_KIND_AGENT_END: return "agent_end";
    case PI_AGENT_EVENT_KIND_TURN_START: return "turn_start";
    case PI_AGENT_EVENT_KIND_TURN_END: return "turn_end";
    case PI_AGENT_EVENT_KIND_MESSAGE_START: return "message_start";
    case PI_AGENT_EVENT_KIND_MESSAGE_UPDATE: return "message_update";
    case PI_AGENT_EVENT_KIND_MESSAGE_END: return "message_end";
    case PI_AGENT_EVENT_KIND_TOOL_EXECUTION_START: return "tool_execution_start";
    case PI_AGENT_EVENT_KIND_TOOL_EXECUTION_UPDATE: return "tool_execution_update";
    case PI_AGENT_EVENT_KIND_TOOL_EXECUTION_END: return "tool_execution_end";
    }
    return "?";
}

static void record(void *user_data, const pi_agent_event *event) {
    recorder *r = user_data;
    const char *json = event->json.data;
    size_t len = event->json.len;
    char entry[128], role[32] = "", id[32] = "";
    if (event->kind == PI_AGENT_EVENT_KIND_TOOL_EXECUTION_UPDATE) {
        atomic_fetch_add(&r->updates, 1);
        CHECK(str_contains(event->json, "\"partialResult\":{"));
        if (str_contains(event->json, "25%")) atomic_fetch_add(&r->update_text, 1);
        if (str_contains(event->json, "50%") && str_contains(event->json, "\"done\":5")) {
            atomic_fetch_add(&r->update_details, 1);
        }
    }
    switch (event->kind) {
    case PI_AGENT_EVENT_KIND_MESSAGE_UPDATE:
        if (!atomic_load(&r->saw_streaming)) {
            char *message = NULL;
            OK(pi_agent_streaming_message_json(r->agent, &message));
            if (message != NULL && strstr(message, "\"role\":\"assistant\"") != NULL) {
                atomic_store(&r->saw_streaming, 1);
            }
            pi_string_free(message);
        }
        return;
    case PI_AGENT_EVENT_KIND_MESSAGE_START:
    case PI_AGENT_EVENT_KIND_MESSAGE_END:
        CHECK(json_string(json, len, "role", role, sizeof role));
        if (strcmp(role, "toolResult") == 0) {
            CHECK(json_string(json, len, "toolCallId", id, sizeof id));
            snprintf(entry, sizeof entry, "%s:%s:%s ", event_name(event->kind), role, id);
        } else {
            snprintf(entry, sizeof entry, "%s:%s ", event_name(event->kind), role);
        }
        break;
    case PI_AGENT_EVENT_KIND_TOOL_EXECUTION_UPDATE:
    case PI_AGENT_EVENT_KIND_TOOL_EXECUTION_START:
    case PI_AGENT_EVENT_KIND_TOOL_EXECUTION_END:
        CHECK(json_string(json, len, "toolCallId", id, sizeof id));
        snprintf(entry, sizeof entry, "%s:%s ", event_name(event->kind), id);
        break;
    default:
        snprintf(entry, sizeof entry, "%s ", event_name(event->kind));
        break;
    }
    pthread_mutex_lock(&r->lock);
    CHECK(strlen(r->log) + strlen(entry) < sizeof r->log);
    strcat(r->log, entry);
    pthread_mutex_unlock(&r->lock);
}

static void subscribe(recorder *r, pi_agent *agent) {
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->lock, NULL);
    r->agent = agent;
    uint64_t id;
    OK(pi_agent_subscribe(agent, record, r, NULL, &id));
}

static void expect_in_order(const recorder *r, const char *first, const char *second) {
    if (!in_order(r->log, first, second)) {
        fprintf(stderr, "expected `%s` before `%s` in: %s\n", first, second, r->log);
        exit(1);
    }
}

/* ------------------------------------------------------------ catalog and options */

static void test_catalog(void) {
    pi_model *model = NULL;
    OK(pi_model_get("anthropic", "claude-opus-4-7", &model));
    CHECK(str_eq(pi_model_api(model), "anthropic-messages"));
    CHECK(str_eq(pi_model_provider(model), "anthropic"));
    CHECK(str_eq(pi_model_id(model), "claude-opus-4-7"));
    char *json = NULL;
    OK(pi_model_supported_thinking_levels_json(model, &json));
    CHECK(strcmp(json, "[\"off\",\"minimal\",\"low\",\"medium\",\"high\",\"xhigh\"]") == 0);
    pi_string_free(json);
    pi_model_free(model);

    static char sentinel;
    model = (pi_model *)(void *)&sentinel;
    EXPECT_ERROR(pi_model_get("anthropic", "claude-nonexistent", &model), PI_ERROR_KIND_NOT_FOUND);
    EXPECT_ERROR(pi_model_get("nobody", "claude-opus-4-7", &model), PI_ERROR_KIND_NOT_FOUND);
    EXPECT_ERROR(pi_model_get(NULL, "x", &model), PI_ERROR_KIND_NULL_ARGUMENT);
    EXPECT_ERROR(pi_model_resolve("claude-opus-4-7", &model), PI_ERROR_KIND_NOT_FOUND);
    CHECK(model == (pi_model *)(void *)&sentinel);
    OK(pi_model_resolve("anthropic/claude-opus-4-7", &model));
    CHECK(str_eq(pi_model_api(model), "anthropic-messages"));
    pi_model_free(model);

    OK(pi_providers_json(&json));
    CHECK(json[0] == '[' && strstr(json, "\"anthropic\"") != NULL);
    CHECK(strstr(json, "\"openai\"") != NULL);
    pi_string_free(json);
    OK(pi_models_json("anthropic", &json));
    CHECK(json[0] == '[' && strstr(json, "\"id\":\"claude-opus-4-7\"") != NULL);
    CHECK(strstr(json, "\"api\":\"anthropic-messages\"") != NULL);
    pi_string_free(json);
    OK(pi_models_json("nobody", &json));
    CHECK(strcmp(json, "[]") == 0);
    pi_string_free(json);

    /* A model without reasoning supports only "off". */
    pi_faux *faux = NULL;
    OK(pi_faux_new(&faux));
    OK(pi_faux_model(faux, &model));
    OK(pi_model_supported_thinking_levels_json(model, &json));
    CHECK(strcmp(json, "[\"off\"]") == 0);
    pi_string_free(json);
    pi_model_free(model);
    pi_faux_free(faux);

    /* Context overflow (pi's isContextOverflow). */
    bool overflow = false;
    OK(pi_is_context_overflow(
        "{\"role\":\"assistant\",\"content\":[],\"api\":\"anthropic-messages\",\"provider\":"
        "\"anthropic\",\"model\":\"m\",\"stopReason\":\"error\",\"errorMessage\":\"400 prompt is "
        "too long: 210000 tokens > 200000 maximum\",\"timestamp\":0}",
        200000, &overflow));
    CHECK(overflow);
    const char *fits = "{\"content\":[],\"api\":\"a\",\"provider\":\"p\",\"model\":\"m\","
                       "\"stopReason\":\"stop\",\"usage\":{\"input\":1000},\"timestamp\":0}";
    OK(pi_is_context_overflow(fits, 100000, &overflow));
    CHECK(!overflow);
    OK(pi_is_context_overflow(fits, 500, &overflow)); /* silently truncated (z.ai) */
    CHECK(overflow);
    EXPECT_ERROR(pi_is_context_overflow("{\"role\":\"user\",\"content\":\"hi\"}", 0, &overflow),
                 PI_ERROR_KIND_INVALID_JSON);
    EXPECT_ERROR(pi_is_context_overflow(fits, 0, NULL), PI_ERROR_KIND_NULL_ARGUMENT);

    /* The machine-readable failure of a message (errorKind, httpStatus, retryAfterMs). */
    pi_message_error failure;
    OK(pi_message_error_info(
        "{\"role\":\"assistant\",\"content\":[],\"api\":\"a\",\"provider\":\"p\",\"model\":"
        "\"m\",\"stopReason\":\"error\",\"errorMessage\":\"429 slow down\",\"errorKind\":"
        "\"rate_limit\",\"httpStatus\":429,\"retryAfterMs\":2000,\"timestamp\":0}",
        &failure));
    CHECK(failure.kind == PI_MESSAGE_ERROR_KIND_RATE_LIMIT);
    CHECK(failure.http_status == 429);
    CHECK(failure.retry_after_ms == 2000);
    CHECK(failure.transient);
    pi_str name = pi_message_error_kind_name(failure.kind);
    CHECK(name.len == 10 && memcmp(name.data, "rate_limit", 10) == 0);
    OK(pi_message_error_info(fits, &failure)); /* no failure, or a message saved by pi */
    CHECK(failure.kind == PI_MESSAGE_ERROR_KIND_NONE);
    CHECK(failure.http_status == 0 && failure.retry_after_ms == -1 && !failure.transient);
    CHECK(pi_message_error_kind_name(PI_MESSAGE_ERROR_KIND_NONE).len == 0);
    CHECK(pi_message_error_kind_name(999).len == 0);
    EXPECT_ERROR(pi_message_error_info("{\"role\":\"user\",\"content\":\"hi\"}", &failure),
                 PI_ERROR_KIND_INVALID_JSON);
    EXPECT_ERROR(pi_message_error_info(fits, NULL), PI_ERROR_KIND_NULL_ARGUMENT);
}

/* Every request option, in pi's camelCase. */
#define REQUEST_OPTIONS                                                                      \
    "\"apiKey\":\"k\",\"temperature\":0.5,\"maxTokens\":100,\"headers\":{\"x-a\":\"1\"},"    \
    "\"sessionId\":\"s\",\"thinkingBudgets\":{\"minimal\":128,\"low\":512,\"medium\":1024,"  \
    "\"high\":2048},\"toolChoice\":\"auto\",\"cacheRetention\":\"long\",\"maxRetries\":0,"   \
    "\"maxRetryDelayMs\":1000,\"requestTimeoutMs\":30000,\"idleTimeoutMs\":30000"

static void test_options(void) {
    pi_faux *faux = NULL;
    OK(pi_faux_new(&faux));
    OK(pi_faux_push_json(faux, "[{\"content\":\"streamed\"},{\"content\":\"agent\"}]"));
    pi_model *model = NULL;
    OK(pi_faux_model(faux, &model));

    pi_stream *stream = NULL;
    OK(pi_stream_open(model, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":0}]}",
                      "{" REQUEST_OPTIONS ",\"reasoning\":\"high\"}", &stream));
    char *json = NULL;
    OK(pi_stream_result_json(stream, &json));
    CHECK(strstr(json, "streamed") != NULL);
    pi_string_free(json);
    pi_stream_free(stream);

    const char *bad_stream_options[] = {
        "{\"maxToken\":1}",
        "{\"thinkingBudgets\":{\"hgih\":1}}",
        "{\"toolTimeoutMs\":1}", /* an agent setting */
        "{\"cacheRetention\":\"forever\"}",
        "{\"reasoning\":\"max\"}",
    };
    for (size_t i = 0; i < sizeof bad_stream_options / sizeof *bad_stream_options; i++) {
        EXPECT_ERROR(pi_stream_open(model, "{\"messages\":[]}", bad_stream_options[i], &stream),
                     PI_ERROR_KIND_INVALID_JSON);
    }

    /* The unknown-key message is core's, naming the known keys. */
    pi_error *err = pi_stream_open(model, "{\"messages\":[]}", "{\"apiKye\":\"k\"}", &stream);
    CHECK(pi_error_get_kind(err) == PI_ERROR_KIND_INVALID_JSON);
    CHECK(str_contains(pi_error_message(err), "unknown field `apiKye`, expected one of"));
    pi_error_free(err);

    pi_agent *agent = NULL;
    OK(pi_agent_new(model, "",
                    "{\"streamOptions\":{" REQUEST_OPTIONS "},\"toolExecution\":\"sequential\","
                    "\"thinkingLevel\":\"low\",\"steeringMode\":\"all\",\"followUpMode\":"
                    "\"one-at-a-time\",\"streamIdleTimeoutMs\":60000,\"toolTimeoutMs\":60000}",
                    &agent));
    OK(pi_agent_prompt(agent, "hi"));
    json = messages_json(agent);
    CHECK(strstr(json, "\"agent\"") != NULL);
    pi_string_free(json);
    OK(pi_agent_snapshot_json(agent, &json));
    CHECK(strstr(json, "\"toolExecution\":\"sequential\"") != NULL);
    CHECK(strstr(json, "\"thinkingLevel\":\"low\"") != NULL);
    CHECK(strstr(json, "\"steeringMode\":\"all\"") != NULL);
    pi_string_free(json);

    /* The setters take the same names. */
    OK(pi_agent_set_tool_execution(agent, "parallel"));
    OK(pi_agent_set_thinking_level(agent, "off"));
    OK(pi_agent_set_steering_mode(agent, "one-at-a-time"));
    OK(pi_agent_set_follow_up_mode(agent, "all"));
    OK(pi_agent_set_system_prompt(agent, "Be brief."));
    EXPECT_ERROR(pi_agent_set_tool_execution(agent, "sideways"), PI_ERROR_KIND_INVALID_ARGUMENT);
    EXPECT_ERROR(pi_agent_set_thinking_level(agent, "max"), PI_ERROR_KIND_INVALID_ARGUMENT);
    EXPECT_ERROR(pi_agent_set_steering_mode(agent, "sometimes"), PI_ERROR_KIND_INVALID_ARGUMENT);
    EXPECT_ERROR(pi_agent_set_follow_up_mode(agent, NULL), PI_ERROR_KIND_NULL_ARGUMENT);
    OK(pi_agent_snapshot_json(agent, &json));
    CHECK(strstr(json, "\"toolExecution\":\"parallel\"") != NULL);
    CHECK(strstr(json, "\"thinkingLevel\":\"off\"") != NULL);
    CHECK(strstr(json, "\"followUpMode\":\"all\"") != NULL);
    CHECK(strstr(json, "\"systemPrompt\":\"Be brief.\"") != NULL);
    pi_string_free(json);
    pi_agent_free(agent);

    agent = NULL;
    const char *bad_agent_options[] = {
        "{\"reasoning\":\"high\"}", /* agents use thinkingLevel */
        "{\"apiKey\":\"k\"}",       /* request options are in streamOptions */
        "{\"messages\":[]}",        /* the transcript is set with pi_agent_set_messages_json */
        "{\"streamOptions\":{\"apiKye\":\"k\"}}",
        "{\"idleTimeout\":1}",
        "{\"toolTimeoutMs\":\"soon\"}",
        "{\"thinkingLevel\":\"max\"}",
        "{\"steeringMode\":\"some\"}",
    };
    for (size_t i = 0; i < sizeof bad_agent_options / sizeof *bad_agent_options; i++) {
        EXPECT_ERROR(pi_agent_new(model, "", bad_agent_options[i], &agent),
                     PI_ERROR_KIND_INVALID_JSON);
    }
    CHECK(agent == NULL);
    pi_model_free(model);
    pi_faux_free(faux);
}

/* Replaced and removed tools and hooks free their user_data once unused; the rest at free. */
static int32_t noop_before(void *user_data, pi_before_tool_call *context) {
    (void)user_data;
    (void)context;
    return 0;
}

static int32_t noop_after(void *user_data, pi_after_tool_call *context) {
    (void)user_data;
    (void)context;
    return 0;
}

static void test_registrations(void) {
    fixture f;
    setup(&f, NULL, NULL);
    atomic_store(&freed, 0);
    OK(pi_agent_add_tool(f.agent, "echo", "Echoes", OBJECT_SCHEMA, echo_tool, NULL, count_free));
    OK(pi_agent_add_tool(f.agent, "echo", "Echoes", OBJECT_SCHEMA, echo_tool, NULL, count_free));
    CHECK(atomic_load(&freed) == 1); /* the replaced tool */
    OK(pi_agent_remove_tool(f.agent, "echo"));
    CHECK(atomic_load(&freed) == 2);
    EXPECT_ERROR(pi_agent_remove_tool(f.agent, "echo"), PI_ERROR_KIND_NOT_FOUND);
    EXPECT_ERROR(pi_agent_remove_tool(f.agent, NULL), PI_ERROR_KIND_NULL_ARGUMENT);
    OK(pi_agent_add_tool(f.agent, "echo", "Echoes", OBJECT_SCHEMA, echo_tool, NULL, count_free));

    OK(pi_agent_set_before_tool_call(f.agent, noop_before, NULL, count_free));
    OK(pi_agent_set_before_tool_call(f.agent, noop_before, NULL, count_free));
    CHECK(atomic_load(&freed) == 3); /* the replaced hook */
    OK(pi_agent_set_before_tool_call(f.agent, NULL, NULL, count_free));
    CHECK(atomic_load(&freed) == 4); /* the removed hook; the NULL registration takes nothing */
    OK(pi_agent_set_after_tool_call(f.agent, noop_after, NULL, count_free));
    EXPECT_ERROR(pi_agent_set_after_tool_call(NULL, noop_after, NULL, count_free),
                 PI_ERROR_KIND_NULL_ARGUMENT);
    CHECK(atomic_load(&freed) == 4);
    teardown(&f);
    CHECK(atomic_load(&freed) == 6); /* the last tool and hook */
}

/* ------------------------------------------------------------ tool execution order */

static const char *PAIR_SCRIPT =
    "[{\"content\":[" TOOL_CALL("s1", "slow", "{}") "," TOOL_CALL("f1", "fast", "{}") "]},"
    "{\"content\":\"Both done.\"}]";

static void add_pair(pi_agent *agent, pair_state *state) {
    OK(pi_agent_add_tool(agent, "slow", "Slow", OBJECT_SCHEMA, slow_tool, state, NULL));
    OK(pi_agent_add_tool(agent, "fast", "Fast", OBJECT_SCHEMA, fast_tool, state, NULL));
}

static void test_parallel_order(void) {
    fixture f;
    setup(&f, PAIR_SCRIPT, NULL);
    static pair_state state;
    memset(&state, 0, sizeof state);
    state.agent = f.agent;
    state.wait_for_fast = true;
    add_pair(f.agent, &state);
    static recorder rec;
    subscribe(&rec, f.agent);
    OK(pi_agent_prompt(f.agent, "Run both"));

    CHECK(atomic_load(&state.overlapped) == 1);
    CHECK(atomic_load(&state.pending_seen) == 1);
    CHECK(atomic_load(&rec.saw_streaming) == 1);
    /* Executions end as they finish (the slow one last) ... */
    expect_in_order(&rec, "tool_execution_start:s1", "tool_execution_start:f1");
    expect_in_order(&rec, "tool_execution_end:f1", "tool_execution_end:s1");
    /* ... and the results are reported afterwards, in the assistant's order. */
    expect_in_order(&rec, "tool_execution_end:s1", "message_end:toolResult:s1");
    expect_in_order(&rec, "message_end:toolResult:s1", "message_end:toolResult:f1");
    char *json = messages_json(f.agent);
    CHECK(in_order(json, "\"toolCallId\":\"s1\"", "\"toolCallId\":\"f1\""));
    CHECK(strstr(json, "Both done.") != NULL);
    pi_string_free(json);
    OK(pi_agent_pending_tool_calls_json(f.agent, &json));
    CHECK(strcmp(json, "[]") == 0);
    pi_string_free(json);
    OK(pi_agent_streaming_message_json(f.agent, &json));
    CHECK(json == NULL); /* nothing is streaming now */
    OK(pi_agent_listener_errors_json(f.agent, &json));
    CHECK(strcmp(json, "[]") == 0);
    pi_string_free(json);
    teardown(&f);
}

static void test_sequential_order(void) {
    fixture f;
    setup(&f, PAIR_SCRIPT, NULL);
    OK(pi_agent_set_tool_execution(f.agent, "sequential"));
    static pair_state state;
    memset(&state, 0, sizeof state);
    state.agent = f.agent;
    add_pair(f.agent, &state);
    static recorder rec;
    subscribe(&rec, f.agent);
    OK(pi_agent_prompt(f.agent, "Run both"));

    CHECK(atomic_load(&state.overlapped) == 0);
    expect_in_order(&rec, "tool_execution_end:s1", "message_end:toolResult:s1");
    expect_in_order(&rec, "message_end:toolResult:s1", "tool_execution_start:f1");
    expect_in_order(&rec, "tool_execution_end:f1", "message_end:toolResult:f1");
    teardown(&f);
}

/* ------------------------------------------------------------ queues */

typedef struct {
    pi_agent *agent;
    atomic_int steered;
} steer_state;

/* Steers once, from inside the first of the batch's calls to run. */
static int32_t steering_tool(void *user_data, pi_tool_call *call) {
    steer_state *s = user_data;
    if (atomic_exchange(&s->steered, 1) == 0) {
        EXPECT_ERROR(pi_agent_steer_json(s->agent, "{\"role\":\"user\"}"),
                     PI_ERROR_KIND_INVALID_JSON);
        OK(pi_agent_steer_json(s->agent, "{\"role\":\"user\",\"content\":\"Also check the logs.\","
                                         "\"timestamp\":0}"));
        CHECK(pi_agent_has_queued_messages(s->agent));
    }
    OK(pi_tool_call_set_text(call, "step done"));
    return 0;
}

static void test_steering(void) {
    fixture f;
    setup(&f,
          "[{\"content\":[" TOOL_CALL("a1", "step", "{}") "," TOOL_CALL("a2", "step", "{}") "]},"
          "{\"content\":\"Checked the logs.\"}]",
          NULL);
    static steer_state state;
    state.agent = f.agent;
    atomic_store(&state.steered, 0);
    OK(pi_agent_add_tool(f.agent, "step", "A step", OBJECT_SCHEMA, steering_tool, &state, NULL));
    OK(pi_agent_prompt(f.agent, "Do the steps"));
    CHECK(!pi_agent_has_queued_messages(f.agent));

    /* The steering message comes after the whole tool batch ... */
    char *json = messages_json(f.agent);
    CHECK(in_order(json, "\"toolCallId\":\"a2\"", "Also check the logs."));
    CHECK(in_order(json, "Also check the logs.", "Checked the logs."));
    pi_string_free(json);
    /* ... and the next model call got it as its last message. */
    char *contexts = contexts_json(f.faux);
    CHECK(count(contexts, "Also check the logs.") == 1);
    CHECK(in_order(contexts, "\"toolCallId\":\"a2\"", "Also check the logs."));
    pi_string_free(contexts);
    teardown(&f);
}

static void test_follow_up(void) {
    fixture f;
    setup(&f, "[{\"content\":\"Hello.\"},{\"content\":\"Bonjour.\"}]", NULL);
    OK(pi_agent_follow_up_json(f.agent, "{\"role\":\"user\",\"content\":\"And in French?\","
                                        "\"timestamp\":0}"));
    CHECK(pi_agent_has_queued_messages(f.agent));
    OK(pi_agent_prompt(f.agent, "Say hello"));
    CHECK(!pi_agent_has_queued_messages(f.agent));
    char *json = messages_json(f.agent);
    CHECK(in_order(json, "Say hello", "Hello."));
    CHECK(in_order(json, "Hello.", "And in French?"));
    CHECK(in_order(json, "And in French?", "Bonjour."));
    pi_string_free(json);

    /* Mode "all" takes both queued follow-ups at once: one more model call. */
    OK(pi_faux_push_json(f.faux, "[{\"content\":\"First.\"},{\"content\":\"Both answered.\"}]"));
    OK(pi_agent_set_follow_up_mode(f.agent, "all"));
    OK(pi_agent_follow_up_text(f.agent, "Question one"));
    OK(pi_agent_follow_up_text(f.agent, "Question two"));
    OK(pi_agent_prompt(f.agent, "Start"));
    CHECK(pi_faux_pending(f.faux) == 0);
    json = messages_json(f.agent);
    CHECK(in_order(json, "First.", "Question one"));
    CHECK(in_order(json, "Question one", "Question two"));
    CHECK(in_order(json, "Question two", "Both answered."));
    pi_string_free(json);

    /* Cleared queues run nothing. */
    OK(pi_agent_steer_text(f.agent, "steer"));
    OK(pi_agent_follow_up_text(f.agent, "follow"));
    pi_agent_clear_steering_queue(f.agent);
    CHECK(pi_agent_has_queued_messages(f.agent));
    pi_agent_clear_follow_up_queue(f.agent);
    CHECK(!pi_agent_has_queued_messages(f.agent));
    OK(pi_agent_follow_up_text(f.agent, "follow"));
    pi_agent_clear_queues(f.agent);
    CHECK(!pi_agent_has_queued_messages(f.agent));
    EXPECT_ERROR(pi_agent_continue(f.agent), PI_ERROR_KIND_CANNOT_CONTINUE);
    teardown(&f);
}

static void test_continue_from_user(void) {
    fixture f;
    setup(&f, "{\"content\":\"4.\"}", NULL);
    OK(pi_agent_set_messages_json(f.agent, "[{\"role\":\"user\",\"content\":\"What is 2+2?\","
                                           "\"timestamp\":1}]"));
    OK(pi_agent_continue(f.agent));
    char *json = messages_json(f.agent);
    CHECK(count(json, "\"role\":") == 2);
    CHECK(in_order(json, "What is 2+2?", "\"text\":\"4.\""));
    pi_string_free(json);
    expect_error(pi_agent_continue(f.agent), PI_ERROR_KIND_CANNOT_CONTINUE,
                 "Cannot continue from message role: assistant", __LINE__);
    teardown(&f);
}

/* ------------------------------------------------------------ abort */

typedef struct {
    atomic_int started;
    atomic_int returned;
} abort_state;

static int32_t wait_for_abort_tool(void *user_data, pi_tool_call *call) {
    abort_state *s = user_data;
    atomic_store(&s->started, 1);
    for (int i = 0; i < 10000 && !pi_tool_call_is_aborted(call); i++) sleep_ms(1);
    OK(pi_tool_call_set_text(call, "too late"));
    atomic_store(&s->returned, 1);
    return 0;
}

typedef struct {
    pi_agent *agent;
    pi_error *result;
} prompt_job;

static void *run_prompt(void *arg) {
    prompt_job *job = arg;
    job->result = pi_agent_prompt(job->agent, "Take your time");
    return NULL;
}

static void test_abort_during_tool(void) {
    fixture f;
    setup(&f, "[{\"content\":[" TOOL_CALL("w1", "wait", "{}") "]},{\"content\":\"Recovered.\"}]",
          NULL);
    static abort_state state;
    OK(pi_agent_add_tool(f.agent, "wait", "Waits", OBJECT_SCHEMA, wait_for_abort_tool, &state,
                         NULL));
    prompt_job job = {f.agent, NULL};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, run_prompt, &job) == 0);
    CHECK(wait_for(&state.started));
    pi_agent_abort(f.agent);
    CHECK(pthread_join(thread, NULL) == 0);
    OK(job.result);
    CHECK(!pi_agent_is_streaming(f.agent));
    CHECK(wait_for(&state.returned));

    /* No assistant message after the aborted tool: the transcript ends with its result. */
    char *json = messages_json(f.agent);
    CHECK(count(json, "\"role\":\"assistant\"") == 1);
    CHECK(count(json, "\"role\":\"toolResult\"") == 1);
    CHECK(in_order(json, "\"toolCallId\":\"w1\"", "Tool execution was aborted"));
    CHECK(strstr(json, "too late") == NULL);
    pi_string_free(json);
    CHECK(pi_faux_pending(f.faux) == 1);

    /* The transcript is valid: the agent continues from it. */
    OK(pi_agent_continue(f.agent));
    json = messages_json(f.agent);
    CHECK(count(json, "\"role\":\"assistant\"") == 2);
    CHECK(strstr(json, "Recovered.") != NULL);
    pi_string_free(json);
    teardown(&f);
}

/* ------------------------------------------------------------ hooks */

typedef struct {
    atomic_int calls;
} hook_state;

/* Rewrites the arguments of c1, blocks "danger", and fails for c2. */
static int32_t before_hook(void *user_data, pi_before_tool_call *context) {
    hook_state *s = user_data;
    atomic_fetch_add(&s->calls, 1);
    CHECK(str_contains(pi_before_tool_call_context_json(context),
                       "{\"assistantMessage\":{\"role\":\"assistant\""));
    CHECK(!pi_before_tool_call_is_aborted(context));
    if (str_eq(pi_before_tool_call_name(context), "danger")) {
        OK(pi_before_tool_call_block(context, "Not allowed here."));
    } else if (str_eq(pi_before_tool_call_id(context), "c1")) {
        CHECK(str_eq(pi_before_tool_call_arguments_json(context), "{\"text\":\"one\"}"));
        EXPECT_ERROR(pi_before_tool_call_set_arguments_json(context, "[1]"),
                     PI_ERROR_KIND_INVALID_JSON);
        OK(pi_before_tool_call_set_arguments_json(context, "{\"text\":\"rewritten\"}"));
    } else if (str_eq(pi_before_tool_call_id(context), "c2")) {
        return 5;
    }
    return 0;
}

static void test_before_tool_call(void) {
    fixture f;
    setup(&f,
          "[{\"content\":[" TOOL_CALL("c1", "echo", "{\"text\":\"one\"}") "," TOOL_CALL(
              "d1", "danger", "{}") "," TOOL_CALL("c2", "echo", "{\"text\":\"two\"}") "]},"
                                    "{\"content\":\"done\"}]",
          NULL);
    static atomic_int echo_calls, danger_calls;
    OK(pi_agent_add_tool(f.agent, "echo", "Echoes", OBJECT_SCHEMA, echo_tool, &echo_calls, NULL));
    OK(pi_agent_add_tool(f.agent, "danger", "Dangerous", OBJECT_SCHEMA, echo_tool, &danger_calls,
                         NULL));
    static hook_state state;
    atomic_store(&freed, 0);
    OK(pi_agent_set_before_tool_call(f.agent, before_hook, &state, count_free));
    OK(pi_agent_prompt(f.agent, "Use the tools"));
    CHECK(atomic_load(&state.calls) == 3);
    CHECK(atomic_load(&echo_calls) == 1);
    CHECK(atomic_load(&danger_calls) == 0);
    char *json = messages_json(f.agent);
    CHECK(count(json, "rewritten") == 1); /* only in c1's result */
    CHECK(count(json, "echo:") == 1);
    CHECK(in_order(json, "\"toolCallId\":\"d1\"", "Not allowed here."));
    CHECK(in_order(json, "\"toolCallId\":\"c2\"", "before_tool_call hook returned error code 5"));
    CHECK(count(json, "\"isError\":true") == 2);
    pi_string_free(json);

    /* Removed: the next run has no hook, and its user_data is freed. */
    OK(pi_agent_set_before_tool_call(f.agent, NULL, NULL, NULL));
    CHECK(atomic_load(&freed) == 1);
    OK(pi_agent_set_messages_json(f.agent, "[]"));
    OK(pi_faux_push_json(f.faux, "[{\"content\":[" TOOL_CALL("d2", "danger", "{}") "]},"
                                 "{\"content\":\"done again\"}]"));
    OK(pi_agent_prompt(f.agent, "Again"));
    CHECK(atomic_load(&state.calls) == 3);
    CHECK(atomic_load(&danger_calls) == 1);
    teardown(&f);
}

static int32_t after_hook(void *user_data, pi_after_tool_call *context) {
    hook_state *s = user_data;
    atomic_fetch_add(&s->calls, 1);
    CHECK(str_eq(pi_after_tool_call_id(context), "e1"));
    CHECK(str_eq(pi_after_tool_call_name(context), "echo"));
    CHECK(str_eq(pi_after_tool_call_arguments_json(context), "{\"text\":\"secret\"}"));
    /* The rest is in the context: core's AfterToolCallContext JSON. */
    pi_str json = pi_after_tool_call_context_json(context);
    CHECK(str_contains(json, "{\"assistantMessage\":{\"role\":\"assistant\""));
    CHECK(str_contains(json, "\"toolCall\":{\"type\":\"toolCall\",\"id\":\"e1\""));
    CHECK(str_contains(json, "\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"echo:"));
    CHECK(str_contains(json, "\"isError\":false}"));
    CHECK(!pi_after_tool_call_is_error(context));
    CHECK(!pi_after_tool_call_is_aborted(context));
    EXPECT_ERROR(pi_after_tool_call_set_result_json(context, "{\"contnet\":[]}"),
                 PI_ERROR_KIND_INVALID_JSON);
    OK(pi_after_tool_call_set_result_json(
        context, "{\"content\":[{\"type\":\"text\",\"text\":\"[redacted]\"}],"
                 "\"details\":{\"by\":\"hook\"},\"isError\":true}"));
    return 0;
}

static void test_after_tool_call(void) {
    fixture f;
    setup(&f,
          "[{\"content\":[" TOOL_CALL("e1", "echo", "{\"text\":\"secret\"}") "]},"
          "{\"content\":\"done\"}]",
          NULL);
    OK(pi_agent_add_tool(f.agent, "echo", "Echoes", OBJECT_SCHEMA, echo_tool, NULL, NULL));
    static hook_state state;
    OK(pi_agent_set_after_tool_call(f.agent, after_hook, &state, NULL));
    OK(pi_agent_prompt(f.agent, "Echo the secret"));
    CHECK(atomic_load(&state.calls) == 1);
    char *json = messages_json(f.agent);
    CHECK(in_order(json, "\"toolCallId\":\"e1\"", "[redacted]"));
    CHECK(strstr(json, "\"details\":{\"by\":\"hook\"}") != NULL);
    CHECK(strstr(json, "\"isError\":true") != NULL);
    CHECK(strstr(json, "echo:") == NULL);
    pi_string_free(json);
    /* The model saw the replaced result. */
    char *contexts = contexts_json(f.faux);
    CHECK(strstr(contexts, "[redacted]") != NULL && strstr(contexts, "echo:") == NULL);
    pi_string_free(contexts);
    teardown(&f);
}

static void stop_hook(void *user_data, const pi_should_stop_after_turn *context, bool *stop_out) {
    hook_state *s = user_data;
    atomic_fetch_add(&s->calls, 1);
    CHECK(!*stop_out);
    /* The turn as core's ShouldStopAfterTurnContext JSON: its message, its tool results and
     * what the run added (the prompt first). */
    pi_str json = pi_should_stop_after_turn_context_json(context);
    CHECK(str_contains(json, "{\"message\":{\"role\":\"assistant\""));
    CHECK(str_contains(json, "\"type\":\"toolCall\""));
    CHECK(str_contains(json, "\"toolResults\":[{\"role\":\"toolResult\""));
    CHECK(str_contains(json, "\"newMessages\":[{\"role\":\"user\""));
    *stop_out = true;
}

static void test_should_stop_after_turn(void) {
    fixture f;
    setup(&f,
          "[{\"content\":[" TOOL_CALL("e1", "echo", "{}") "]},{\"content\":\"Later.\"}]", NULL);
    OK(pi_agent_add_tool(f.agent, "echo", "Echoes", OBJECT_SCHEMA, echo_tool, NULL, NULL));
    static hook_state state;
    atomic_store(&freed, 0);
    OK(pi_agent_set_should_stop_after_turn(f.agent, stop_hook, &state, count_free));
    OK(pi_agent_prompt(f.agent, "One turn only"));
    CHECK(atomic_load(&state.calls) == 1);
    CHECK(pi_faux_pending(f.faux) == 1); /* stopped after the tool turn */
    char *json = messages_json(f.agent);
    CHECK(count(json, "\"role\":\"assistant\"") == 1);
    CHECK(count(json, "\"role\":\"toolResult\"") == 1);
    pi_string_free(json);

    OK(pi_agent_set_should_stop_after_turn(f.agent, NULL, NULL, NULL));
    CHECK(atomic_load(&freed) == 1);
    OK(pi_agent_continue(f.agent));
    CHECK(pi_faux_pending(f.faux) == 0);
    json = messages_json(f.agent);
    CHECK(strstr(json, "Later.") != NULL);
    pi_string_free(json);
    teardown(&f);
}

static void transform_hook(void *user_data, pi_transform_context *context) {
    hook_state *s = user_data;
    atomic_fetch_add(&s->calls, 1);
    CHECK(!pi_transform_context_is_aborted(context));
    pi_str messages = pi_transform_context_messages_json(context);
    CHECK(str_contains(messages, "old question") && str_contains(messages, "new question"));
    EXPECT_ERROR(pi_transform_context_set_messages_json(context, "{}"),
                 PI_ERROR_KIND_INVALID_JSON);
    OK(pi_transform_context_set_messages_json(
        context, "[{\"role\":\"user\",\"content\":\"only this\",\"timestamp\":0}]"));
}

static void test_transform_context(void) {
    fixture f;
    setup(&f, "{\"content\":\"new answer\"}", NULL);
    OK(pi_agent_set_messages_json(
        f.agent,
        "[{\"role\":\"user\",\"content\":\"old question\",\"timestamp\":1},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"old answer\"}],"
        "\"api\":\"x\",\"provider\":\"x\",\"model\":\"x\",\"stopReason\":\"stop\","
        "\"timestamp\":2}]"));
    static hook_state state;
    OK(pi_agent_set_transform_context(f.agent, transform_hook, &state, NULL));
    OK(pi_agent_prompt(f.agent, "new question"));
    CHECK(atomic_load(&state.calls) == 1);
    char *contexts = contexts_json(f.faux);
    CHECK(strstr(contexts, "only this") != NULL);
    CHECK(strstr(contexts, "old question") == NULL && strstr(contexts, "new question") == NULL);
    pi_string_free(contexts);
    /* What is sent is never stored. */
    char *json = messages_json(f.agent);
    CHECK(in_order(json, "old question", "new question"));
    CHECK(in_order(json, "new question", "new answer"));
    CHECK(strstr(json, "only this") == NULL);
    pi_string_free(json);
    teardown(&f);
}

/* ------------------------------------------------------------ progress, snapshots, custom */

static int32_t progress_tool(void *user_data, pi_tool_call *call) {
    (void)user_data;
    OK(pi_tool_call_send_update_text(call, "25%"));
    OK(pi_tool_call_send_update_json(
        call, "{\"content\":[{\"type\":\"text\",\"text\":\"50%\"}],\"details\":{\"done\":5}}"));
    EXPECT_ERROR(pi_tool_call_send_update_json(call, "{\"content\":7}"),
                 PI_ERROR_KIND_INVALID_JSON);
    EXPECT_ERROR(pi_tool_call_send_update_text(call, NULL), PI_ERROR_KIND_NULL_ARGUMENT);
    OK(pi_tool_call_set_text(call, "100%"));
    return 0;
}

static void test_tool_updates(void) {
    fixture f;
    setup(&f, "[{\"content\":[" TOOL_CALL("p1", "progress", "{}") "]},{\"content\":\"done\"}]",
          NULL);
    OK(pi_agent_add_tool(f.agent, "progress", "Reports progress", OBJECT_SCHEMA, progress_tool,
                         NULL, NULL));
    static recorder rec;
    subscribe(&rec, f.agent);
    OK(pi_agent_prompt(f.agent, "Go"));
    CHECK(atomic_load(&rec.updates) == 2);
    CHECK(atomic_load(&rec.update_text) == 1);
    CHECK(atomic_load(&rec.update_details) == 1);
    expect_in_order(&rec, "tool_execution_start:p1", "tool_execution_update:p1");
    expect_in_order(&rec, "tool_execution_update:p1 tool_execution_update:p1",
                    "tool_execution_end:p1");
    char *json = messages_json(f.agent);
    CHECK(strstr(json, "25%") == NULL && strstr(json, "\"text\":\"100%\"") != NULL);
    pi_string_free(json);
    teardown(&f);
}

static void test_snapshot_restore(void) {
    fixture f;
    setup(&f, "[{\"content\":\"First answer.\"},{\"content\":\"Second answer.\"}]",
          "{\"steeringMode\":\"all\"}");
    OK(pi_agent_set_system_prompt(f.agent, "Be brief."));
    OK(pi_agent_add_tool(f.agent, "echo", "Echoes", OBJECT_SCHEMA, echo_tool, NULL, NULL));
    OK(pi_agent_prompt(f.agent, "First question"));
    OK(pi_agent_follow_up_text(f.agent, "Second question"));
    char *snapshot = NULL;
    OK(pi_agent_snapshot_json(f.agent, &snapshot));
    CHECK(strstr(snapshot, "\"version\":2") != NULL);
    CHECK(strstr(snapshot, "\"systemPrompt\":\"Be brief.\"") != NULL);
    CHECK(strstr(snapshot, "\"steeringMode\":\"all\"") != NULL);
    CHECK(strstr(snapshot, "\"toolNames\":[\"echo\"]") != NULL);
    CHECK(in_order(snapshot, "\"followUpQueue\"", "Second question"));
    pi_agent_free(f.agent);

    pi_agent *agent = NULL;
    EXPECT_ERROR(pi_agent_restore("{\"version\":1}", NULL, &agent), PI_ERROR_KIND_INVALID_JSON);
    EXPECT_ERROR(pi_agent_restore(snapshot, "{\"messages\":[]}", &agent),
                 PI_ERROR_KIND_INVALID_JSON);
    EXPECT_ERROR(pi_agent_restore(snapshot, "{\"apiKye\":\"k\"}", &agent),
                 PI_ERROR_KIND_INVALID_JSON);
    EXPECT_ERROR(pi_agent_restore(snapshot, "{\"toolTimeoutMs\":1}", &agent),
                 PI_ERROR_KIND_INVALID_JSON);
    CHECK(agent == NULL);
    OK(pi_agent_restore(snapshot, "{\"apiKey\":\"k\"}", &agent));
    pi_string_free(snapshot);
    f.agent = agent;
    CHECK(pi_agent_has_queued_messages(agent));
    OK(pi_agent_add_tool(agent, "echo", "Echoes", OBJECT_SCHEMA, echo_tool, NULL, NULL));
    OK(pi_agent_continue(agent)); /* runs the restored follow-up */
    char *json = messages_json(agent);
    CHECK(in_order(json, "First question", "First answer."));
    CHECK(in_order(json, "First answer.", "Second question"));
    CHECK(in_order(json, "Second question", "Second answer."));
    pi_string_free(json);
    char *contexts = contexts_json(f.faux);
    CHECK(count(contexts, "\"systemPrompt\":\"Be brief.\"") == 2);
    pi_string_free(contexts);
    teardown(&f);
}

static void test_custom_messages(void) {
    fixture f;
    setup(&f, "[{\"content\":\"Hello!\"},{\"content\":\"Still here.\"}]", NULL);
    const char *notification = "{\"role\":\"notification\",\"level\":2,\"text\":\"build finished\"}";
    char transcript[256];
    snprintf(transcript, sizeof transcript,
             "[{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1},%s]", notification);
    OK(pi_agent_set_messages_json(f.agent, transcript));
    OK(pi_agent_follow_up_json(f.agent, "{\"role\":\"bookmark\",\"label\":\"after hello\"}"));
    OK(pi_agent_continue(f.agent)); /* from the custom message at the end */
    char *json = messages_json(f.agent);
    CHECK(strstr(json, notification) != NULL); /* kept verbatim */
    CHECK(in_order(json, notification, "Hello!"));
    CHECK(in_order(json, "Hello!", "{\"role\":\"bookmark\",\"label\":\"after hello\"}"));
    CHECK(in_order(json, "after hello", "Still here."));
    pi_string_free(json);
    char *contexts = contexts_json(f.faux);
    CHECK(count(contexts, "\"messages\"") == 2);
    CHECK(strstr(contexts, "notification") == NULL && strstr(contexts, "build finished") == NULL);
    CHECK(strstr(contexts, "bookmark") == NULL);
    pi_string_free(contexts);
    teardown(&f);
}

/* ------------------------------------------------------------ run limits */

/* Queues `count` replies that each call "echo" (a model that calls a tool forever). */
static void push_tool_loop(pi_faux *faux, int count) {
    for (int i = 0; i < count; i++) {
        OK(pi_faux_push_json(faux, "{\"content\":[" TOOL_CALL("c", "echo", "{}") "]}"));
    }
}

static void test_run_limits(void) {
    /* The default guard: 100 model calls, then a run_limit failure read from the agent. */
    fixture f;
    setup(&f, NULL, NULL);
    push_tool_loop(f.faux, 150);
    static atomic_int calls;
    atomic_store(&calls, 0);
    OK(pi_agent_add_tool(f.agent, "echo", "Echo", OBJECT_SCHEMA, echo_tool, &calls, NULL));
    pi_message_error error;
    CHECK(!pi_agent_last_error(f.agent, &error));
    CHECK(error.kind == PI_MESSAGE_ERROR_KIND_NONE && error.run_limit == PI_RUN_LIMIT_NONE);
    OK(pi_agent_prompt(f.agent, "loop"));
    CHECK(pi_faux_call_count(f.faux) == 100);
    CHECK(atomic_load(&calls) == 100);
    CHECK(pi_agent_last_error(f.agent, &error));
    CHECK(error.kind == PI_MESSAGE_ERROR_KIND_RUN_LIMIT);
    CHECK(error.run_limit == PI_RUN_LIMIT_MAX_TURNS);
    CHECK(!error.transient && error.http_status == 0 && error.retry_after_ms == -1);
    pi_str name = pi_run_limit_name(error.run_limit);
    CHECK(name.len == strlen("maxTurns") && memcmp(name.data, "maxTurns", name.len) == 0);
    name = pi_message_error_kind_name(error.kind);
    CHECK(name.len == strlen("run_limit") && memcmp(name.data, "run_limit", name.len) == 0);
    CHECK(pi_run_limit_name(PI_RUN_LIMIT_NONE).len == 0 && pi_run_limit_name(999).len == 0);
    char *copy = pi_str_dup(pi_run_limit_name(PI_RUN_LIMIT_MAX_TOOL_CALLS)); /* NUL-terminated */
    CHECK(copy != NULL && strcmp(copy, "maxToolCalls") == 0);
    pi_string_free(copy);
    pi_str empty = {NULL, 0};
    copy = pi_str_dup(empty);
    CHECK(copy != NULL && copy[0] == '\0');
    pi_string_free(copy);
    char *text = pi_agent_error_message(f.agent);
    CHECK(text != NULL && strcmp(text, "The run reached its limit of 100 turns (maxTurns)") == 0);
    pi_string_free(text);
    char *json = messages_json(f.agent);
    CHECK(strstr(json, "\"errorKind\":\"run_limit\",") != NULL);
    CHECK(strstr(json, "\"runLimit\":\"maxTurns\"") != NULL);
    pi_string_free(json);
    CHECK(!pi_agent_last_error(NULL, NULL));
    teardown(&f);

    /* A tool-call budget from the settings JSON: the third call does not run. */
    setup(&f, NULL, "{\"limits\":{\"maxTurns\":null,\"maxToolCalls\":2}}");
    push_tool_loop(f.faux, 3); /* exactly what the run takes */
    atomic_store(&calls, 0);
    OK(pi_agent_add_tool(f.agent, "echo", "Echo", OBJECT_SCHEMA, echo_tool, &calls, NULL));
    OK(pi_agent_prompt(f.agent, "loop"));
    CHECK(atomic_load(&calls) == 2);
    CHECK(pi_faux_call_count(f.faux) == 3);
    CHECK(pi_agent_last_error(f.agent, &error));
    CHECK(error.run_limit == PI_RUN_LIMIT_MAX_TOOL_CALLS);
    OK(pi_agent_settings_json(f.agent, &json));
    CHECK(strstr(json, "\"limits\":{\"maxTurns\":null,\"maxToolCalls\":2}") != NULL);
    pi_string_free(json);
    /* A run that ends well clears it. */
    OK(pi_faux_push_json(f.faux, "\"done\""));
    OK(pi_agent_prompt(f.agent, "stop"));
    CHECK(!pi_agent_last_error(f.agent, &error));
    CHECK(error.kind == PI_MESSAGE_ERROR_KIND_NONE);
    teardown(&f);
}

/* Last: pi_shutdown stops the library (so this program exits clean under valgrind's default
 * leak flags); a later call that needs the runtime fails with RUNTIME. */
static void test_shutdown(void) {
    fixture f;
    setup(&f, "\"unused\"", NULL);
    OK(pi_shutdown());
    OK(pi_shutdown()); /* twice is a no-op */
    EXPECT_ERROR(pi_agent_prompt(f.agent, "hi"), PI_ERROR_KIND_RUNTIME);
    teardown(&f);
}

int main(void) {
    test_catalog();
    test_options();
    test_registrations();
    test_parallel_order();
    test_sequential_order();
    test_steering();
    test_follow_up();
    test_continue_from_user();
    test_abort_during_tool();
    test_before_tool_call();
    test_after_tool_call();
    test_should_stop_after_turn();
    test_transform_context();
    test_tool_updates();
    test_snapshot_restore();
    test_custom_messages();
    test_run_limits();
    test_shutdown();
    printf("ffi_agent_test: ok\n");
    return 0;
}
