/*
 * C test of the pi-agent C API, run by ffi/tests/c_programs.rs.
 *
 *   ffi_test faux        offline cases on the faux provider (also run under valgrind)
 *   ffi_test mock URL    cases against the scripted mock server at URL (its base URL, .../v1),
 *                        which must have these replies queued, in order: a text reply, an
 *                        HTTP 401, a stream dropped mid-way, a calculator tool call, a text reply.
 *
 * Exits 0 when every check passed; on the first failed check it prints it and exits 1.
 */
#define _POSIX_C_SOURCE 200809L

#include "test_support.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ calculator */

/* Evaluates "a op b" for + - * /; returns 0 on success. */
static int evaluate(const char *expression, double *result) {
    char *end;
    double a = strtod(expression, &end);
    if (end == expression) return -1;
    while (*end == ' ') end++;
    char op = *end++;
    const char *rest = end;
    double b = strtod(rest, &end);
    if (end == rest) return -1;
    switch (op) {
    case '+': *result = a + b; return 0;
    case '-': *result = a - b; return 0;
    case '*': *result = a * b; return 0;
    case '/': if (b == 0) return -1; *result = a / b; return 0;
    default: return -1;
    }
}

static atomic_int tools_freed;

static void count_free(void *user_data) {
    (void)user_data;
    atomic_fetch_add(&tools_freed, 1);
}

static int32_t calculator(void *user_data, pi_tool_call *call) {
    atomic_int *calls = user_data;
    atomic_fetch_add(calls, 1);
    CHECK(str_eq(pi_tool_call_name(call), "calculator"));
    CHECK(pi_tool_call_id(call).len > 0);
    CHECK(!pi_tool_call_is_aborted(call));
    pi_str args = pi_tool_call_arguments_json(call);
    char expression[128];
    double value;
    if (!json_string(args.data, args.len, "expression", expression, sizeof expression) ||
        evaluate(expression, &value) != 0) {
        OK(pi_tool_call_set_error(call, "cannot evaluate the expression"));
        return 1;
    }
    char text[64];
    snprintf(text, sizeof text, "%g", value);
    OK(pi_tool_call_set_text(call, text));
    return 0;
}

static int32_t failing_with_message(void *user_data, pi_tool_call *call) {
    (void)user_data;
    OK(pi_tool_call_set_text(call, "overwritten by the error"));
    OK(pi_tool_call_set_error(call, "division by zero"));
    return 1;
}

static int32_t failing_with_code(void *user_data, pi_tool_call *call) {
    (void)user_data;
    OK(pi_tool_call_set_result_json(
        call, "{\"content\":[{\"type\":\"text\",\"text\":\"ignored\"}],\"details\":{}}"));
    EXPECT_ERROR(pi_tool_call_set_result_json(call, "{\"content\":"), PI_ERROR_KIND_INVALID_JSON);
    return 7;
}

/* ------------------------------------------------------------ event log */

typedef struct {
    pthread_mutex_t lock;
    char log[16384];
    char text[1024]; /* text deltas of assistant messages */
    pi_agent *agent;
    atomic_int blocking_refused; /* blocking calls from the callback that failed as expected */
    atomic_int freed;
} recorder;

static const char *agent_event_name(pi_agent_event_kind kind) {
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
    const char *name = agent_event_name(event->kind);
    /* The JSON's "type" (its first key) is the same name. */
    char type[64];
    snprintf(type, sizeof type, "{\"type\":\"%s\"", name);
    CHECK(event->json.len > strlen(type) && memcmp(event->json.data, type, strlen(type)) == 0);
    if (event->kind == PI_AGENT_EVENT_KIND_AGENT_START) {
        /* Blocking calls must fail (not deadlock) inside an event callback. */
        EXPECT_ERROR(pi_agent_prompt(r->agent, "nested"), PI_ERROR_KIND_CALLED_FROM_CALLBACK);
        EXPECT_ERROR(pi_agent_wait_for_idle(r->agent), PI_ERROR_KIND_CALLED_FROM_CALLBACK);
        CHECK(pi_agent_is_streaming(r->agent));
        atomic_fetch_add(&r->blocking_refused, 1);
    }
    pthread_mutex_lock(&r->lock);
    size_t used = strlen(r->log);
    if (event->kind == PI_AGENT_EVENT_KIND_MESSAGE_UPDATE) {
        CHECK(event->message_event_kind != PI_STREAM_EVENT_KIND_NONE);
        if (event->message_event_kind == PI_STREAM_EVENT_KIND_TEXT_DELTA) {
            strncat(r->text, event->delta.data,
                    event->delta.len < sizeof r->text - strlen(r->text) - 1
                        ? event->delta.len
                        : sizeof r->text - strlen(r->text) - 1);
        }
        /* Collapse runs of updates. */
        if (used < 15 || strcmp(r->log + used - 15, "message_update ") != 0) {
            strcat(r->log, "message_update ");
        }
    } else {
        CHECK(event->message_event_kind == PI_STREAM_EVENT_KIND_NONE);
        CHECK(event->delta.len == 0);
        strcat(r->log, name);
        if (event->kind == PI_AGENT_EVENT_KIND_MESSAGE_START ||
            event->kind == PI_AGENT_EVENT_KIND_MESSAGE_END) {
            char role[32];
            CHECK(json_string(event->json.data, event->json.len, "role", role, sizeof role));
            strcat(r->log, ":");
            strcat(r->log, role);
        }
        strcat(r->log, " ");
    }
    CHECK(strlen(r->log) < sizeof r->log - 64);
    pthread_mutex_unlock(&r->lock);
}

static void recorder_free(void *user_data) {
    recorder *r = user_data;
    atomic_fetch_add(&r->freed, 1);
}

static void recorder_init(recorder *r, pi_agent *agent) {
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->lock, NULL);
    r->agent = agent;
}

/* ---------------------------------------------------------------- cases */

static void test_version(void) {
    char expected[64];
    snprintf(expected, sizeof expected, "%d.%d.%d", PI_AGENT_VERSION_MAJOR,
             PI_AGENT_VERSION_MINOR, PI_AGENT_VERSION_PATCH);
    CHECK(strcmp(pi_version(), expected) == 0);
}

static const char *CALCULATOR_SCHEMA =
    "{\"type\":\"object\",\"properties\":{\"expression\":{\"type\":\"string\"}},"
    "\"required\":[\"expression\"]}";

static void test_arguments(void) {
    static char sentinel;
    pi_model *model = (pi_model *)(void *)&sentinel;
    EXPECT_ERROR(pi_model_from_json(NULL, &model), PI_ERROR_KIND_NULL_ARGUMENT);
    EXPECT_ERROR(pi_model_from_json("{\"id\":\"\xff\xfe\"}", &model), PI_ERROR_KIND_INVALID_UTF8);
    EXPECT_ERROR(pi_model_from_json("{not json", &model), PI_ERROR_KIND_INVALID_JSON);
    EXPECT_ERROR(pi_model_from_json("{\"id\":\"no-api\"}", &model), PI_ERROR_KIND_INVALID_JSON);
    EXPECT_ERROR(pi_model_from_json("{}", NULL), PI_ERROR_KIND_NULL_ARGUMENT);
    CHECK(model == (pi_model *)(void *)&sentinel); /* out-param untouched on failure */
    /* A credential given where an object goes: the error says so without quoting it. */
    pi_error *misplaced = pi_model_from_json(
        "{\"id\":\"m\",\"api\":\"openai-completions\",\"provider\":\"openai\","
        "\"baseUrl\":\"http://x\",\"headers\":\"Bearer hdr-SECRET-0123\"}",
        &model);
    CHECK(misplaced != NULL && pi_error_get_kind(misplaced) == PI_ERROR_KIND_INVALID_JSON);
    CHECK(str_contains(pi_error_message(misplaced), "invalid type: string"));
    CHECK(!str_contains(pi_error_message(misplaced), "SECRET"));
    pi_error_free(misplaced);

    CHECK(pi_error_get_kind(NULL) == PI_ERROR_KIND_NULL_ARGUMENT);
    CHECK(pi_error_message(NULL).len == 0);
    pi_error_free(NULL);
    pi_model_free(NULL);
    pi_faux_free(NULL);
    pi_agent_free(NULL);
    pi_stream_free(NULL);
    pi_string_free(NULL);
    pi_agent_abort(NULL);
    pi_stream_abort(NULL);
    CHECK(!pi_agent_is_streaming(NULL));
    CHECK(pi_agent_error_message(NULL) == NULL);
    CHECK(pi_faux_pending(NULL) == 0);
    CHECK(pi_model_id(NULL).len == 0);
    CHECK(pi_tool_call_id(NULL).len == 0);
    CHECK(!pi_tool_call_is_aborted(NULL));
    pi_event event;
    CHECK(!pi_stream_next(NULL, &event));

    /* A model from JSON, with any base URL, round-trips. */
    OK(pi_model_from_json("{\"id\":\"llama3\",\"name\":\"Llama 3\",\"api\":\"openai-completions\","
                          "\"provider\":\"ollama\",\"baseUrl\":\"http://localhost:11434/v1\"}",
                          &model));
    CHECK(str_eq(pi_model_id(model), "llama3"));
    CHECK(str_eq(pi_model_provider(model), "ollama"));
    CHECK(str_eq(pi_model_api(model), "openai-completions"));
    char *json = NULL;
    OK(pi_model_to_json(model, &json));
    CHECK(strstr(json, "\"baseUrl\":\"http://localhost:11434/v1\"") != NULL);
    pi_string_free(json);

    pi_agent *agent = NULL;
    EXPECT_ERROR(pi_agent_new(NULL, "", NULL, &agent), PI_ERROR_KIND_NULL_ARGUMENT);
    EXPECT_ERROR(pi_agent_new(model, NULL, NULL, &agent), PI_ERROR_KIND_NULL_ARGUMENT);
    EXPECT_ERROR(pi_agent_new(model, "", "{\"toolExecutoin\":\"sequential\"}", &agent),
                 PI_ERROR_KIND_INVALID_JSON);
    EXPECT_ERROR(pi_agent_new(model, "", "{\"toolExecution\":\"sideways\"}", &agent),
                 PI_ERROR_KIND_INVALID_JSON);
    CHECK(agent == NULL);
    EXPECT_ERROR(pi_agent_new(model, "", "{\"temperature\":0.5}", &agent), /* a stream option */
                 PI_ERROR_KIND_INVALID_JSON);
    CHECK(agent == NULL);
    OK(pi_agent_new(model, "You are terse.",
                    "{\"toolExecution\":\"sequential\",\"streamOptions\":{\"temperature\":0.5,"
                    "\"maxTokens\":100},\"thinkingLevel\":\"off\"}",
                    &agent));
    pi_model_free(model); /* the agent keeps its own copy */
    OK(pi_agent_set_messages_json(agent,
                                  "[{\"role\":\"user\",\"content\":\"earlier\",\"timestamp\":1}]"));
    json = messages_json(agent);
    CHECK(strstr(json, "\"earlier\"") != NULL);
    pi_string_free(json);

    EXPECT_ERROR(pi_agent_prompt(NULL, "hi"), PI_ERROR_KIND_NULL_ARGUMENT);
    EXPECT_ERROR(pi_agent_prompt(agent, NULL), PI_ERROR_KIND_NULL_ARGUMENT);
    EXPECT_ERROR(pi_agent_prompt(agent, "bad \xc3\x28 utf-8"), PI_ERROR_KIND_INVALID_UTF8);
    EXPECT_ERROR(pi_agent_steer_text(agent, "\xff"), PI_ERROR_KIND_INVALID_UTF8);
    EXPECT_ERROR(pi_agent_add_tool(agent, "t", "d", "{}", NULL, NULL, NULL),
                 PI_ERROR_KIND_NULL_ARGUMENT);
    EXPECT_ERROR(pi_agent_add_tool(agent, "t", "d", "{oops", calculator, NULL, count_free),
                 PI_ERROR_KIND_INVALID_JSON);
    EXPECT_ERROR(pi_agent_unsubscribe(agent, 12345), PI_ERROR_KIND_INVALID_ARGUMENT);
    EXPECT_ERROR(pi_agent_set_messages_json(agent, "[{\"content\":\"no role\"}]"),
                 PI_ERROR_KIND_INVALID_JSON);
    uint64_t id = 0;
    EXPECT_ERROR(pi_agent_subscribe(agent, record, NULL, NULL, NULL), PI_ERROR_KIND_NULL_ARGUMENT);
    EXPECT_ERROR(pi_agent_subscribe(agent, NULL, NULL, NULL, &id), PI_ERROR_KIND_NULL_ARGUMENT);
    CHECK(id == 0);
    OK(pi_agent_set_messages_json(agent, "[]"));
    EXPECT_ERROR(pi_agent_continue(agent), PI_ERROR_KIND_CANNOT_CONTINUE);
    pi_agent_free(agent);
    CHECK(atomic_load(&tools_freed) == 0); /* failed registrations never take user_data */

    pi_faux *faux = NULL;
    OK(pi_faux_new(&faux));
    EXPECT_ERROR(pi_faux_push_json(faux, "{\"role\":\"user\",\"content\":\"hi\"}"),
                 PI_ERROR_KIND_INVALID_JSON);
    EXPECT_ERROR(pi_faux_push_json(faux, "[{\"content\":\"ok\"}, 42]"), PI_ERROR_KIND_INVALID_JSON);
    CHECK(pi_faux_pending(faux) == 0);
    EXPECT_ERROR(pi_faux_new_with_options("{\"tokensPerSecnd\":1}", &faux),
                 PI_ERROR_KIND_INVALID_JSON);
    pi_faux_free(faux);
}

/* The agent answers "What is 6 * 7?" through the C calculator tool. */
static void test_agent_with_tool(void) {
    pi_faux *faux = NULL;
    OK(pi_faux_new(&faux));
    OK(pi_faux_push_json(
        faux, "{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"c1\","
              "\"name\":\"calculator\",\"arguments\":{\"expression\":\"6*7\"}}],"
              "\"stopReason\":\"toolUse\"}"));
    OK(pi_faux_push_json(faux, "{\"content\":\"6 * 7 = 42.\"}"));
    CHECK(pi_faux_pending(faux) == 2);
    pi_model *model = NULL;
    OK(pi_faux_model(faux, &model));

    pi_agent *agent = NULL;
    OK(pi_agent_new(model, "You are a calculator.", NULL, &agent));
    pi_model_free(model);
    static atomic_int calls;
    atomic_store(&tools_freed, 0);
    OK(pi_agent_add_tool(agent, "calculator", "Evaluates a op b", CALCULATOR_SCHEMA, calculator,
                         &calls, count_free));
    static recorder rec;
    recorder_init(&rec, agent);
    uint64_t subscription = 0;
    OK(pi_agent_subscribe(agent, record, &rec, recorder_free, &subscription));
    CHECK(subscription != 0);

    OK(pi_agent_prompt(agent, "What is 6 * 7?"));
    CHECK(!pi_agent_is_streaming(agent));
    CHECK(atomic_load(&calls) == 1);
    CHECK(pi_faux_pending(faux) == 0);
    CHECK(pi_faux_call_count(faux) == 2);
    CHECK(atomic_load(&rec.blocking_refused) == 1);
    CHECK(pi_agent_error_message(agent) == NULL);

    const char *expected =
        "agent_start turn_start message_start:user message_end:user "
        "message_start:assistant message_update message_end:assistant "
        "tool_execution_start tool_execution_end message_start:toolResult message_end:toolResult "
        "turn_end turn_start message_start:assistant message_update message_end:assistant "
        "turn_end agent_end ";
    if (strcmp(rec.log, expected) != 0) {
        fprintf(stderr, "events:   %s\nexpected: %s\n", rec.log, expected);
        CHECK(0);
    }
    CHECK(strcmp(rec.text, "6 * 7 = 42.") == 0);

    char *json = messages_json(agent);
    CHECK(count(json, "\"role\":\"user\"") == 1);
    CHECK(count(json, "\"role\":\"assistant\"") == 2);
    CHECK(count(json, "\"role\":\"toolResult\"") == 1);
    CHECK(strstr(json, "\"toolCallId\":\"c1\"") != NULL);
    CHECK(strstr(json, "\"text\":\"42\"") != NULL);
    CHECK(strstr(json, "\"isError\":false") != NULL);
    CHECK(strstr(json, "\"stopReason\":\"toolUse\"") != NULL);
    pi_string_free(json);

    /* Unsubscribed callbacks see no more events; their user_data is freed at once. */
    OK(pi_agent_unsubscribe(agent, subscription));
    CHECK(atomic_load(&rec.freed) == 1);
    EXPECT_ERROR(pi_agent_unsubscribe(agent, subscription), PI_ERROR_KIND_INVALID_ARGUMENT);
    OK(pi_faux_push_json(faux, "{\"content\":\"again\"}"));
    rec.log[0] = '\0';
    OK(pi_agent_prompt(agent, "Once more"));
    CHECK(rec.log[0] == '\0');
    json = messages_json(agent);
    CHECK(count(json, "\"role\":\"assistant\"") == 3);
    pi_string_free(json);

    OK(pi_agent_reset(agent));
    json = messages_json(agent);
    CHECK(strcmp(json, "[]") == 0);
    pi_string_free(json);

    CHECK(atomic_load(&tools_freed) == 0);
    pi_agent_free(agent);
    CHECK(atomic_load(&tools_freed) == 1);
    CHECK(atomic_load(&rec.freed) == 1);
    pi_faux_free(faux);
}

/* Failing tools and unknown tools become isError results the model sees. */
static void test_tool_errors(void) {
    pi_faux *faux = NULL;
    OK(pi_faux_new(&faux));
    OK(pi_faux_push_json(
        faux, "[{\"content\":["
              "{\"type\":\"toolCall\",\"id\":\"a\",\"name\":\"divide\",\"arguments\":{}},"
              "{\"type\":\"toolCall\",\"id\":\"b\",\"name\":\"crash\",\"arguments\":{}},"
              "{\"type\":\"toolCall\",\"id\":\"c\",\"name\":\"nope\",\"arguments\":{}},"
              "{\"type\":\"toolCall\",\"id\":\"d\",\"name\":\"calculator\",\"arguments\":{}}]},"
              "{\"content\":\"Three tools failed.\"}]"));
    CHECK(pi_faux_pending(faux) == 2);
    pi_model *model = NULL;
    OK(pi_faux_model(faux, &model));
    pi_agent *agent = NULL;
    OK(pi_agent_new(model, "", "{\"toolExecution\":\"parallel\"}", &agent));
    pi_model_free(model);
    atomic_store(&tools_freed, 0);
    static atomic_int calls;
    OK(pi_agent_add_tool(agent, "divide", "Fails with a message", "{\"type\":\"object\"}",
                         failing_with_message, NULL, count_free));
    OK(pi_agent_add_tool(agent, "crash", "Fails with a code", "{\"type\":\"object\"}",
                         failing_with_code, NULL, count_free));
    OK(pi_agent_add_tool(agent, "calculator", "Evaluates a op b", CALCULATOR_SCHEMA, calculator,
                         &calls, count_free));

    OK(pi_agent_prompt(agent, "Try the tools"));
    char *json = messages_json(agent);
    CHECK(count(json, "\"role\":\"toolResult\"") == 4);
    CHECK(count(json, "\"isError\":true") == 4);
    CHECK(strstr(json, "\"text\":\"division by zero\"") != NULL);
    CHECK(strstr(json, "\"text\":\"tool callback returned error code 7\"") != NULL);
    CHECK(strstr(json, "\"text\":\"Tool nope not found\"") != NULL);
    CHECK(strstr(json, "ignored") == NULL);
    CHECK(strstr(json, "overwritten") == NULL);
    /* The calculator call had no "expression": schema validation failed before the callback. */
    CHECK(atomic_load(&calls) == 0);
    CHECK(strstr(json, "Three tools failed.") != NULL);
    pi_string_free(json);
    pi_agent_free(agent);
    CHECK(atomic_load(&tools_freed) == 3);
    pi_faux_free(faux);
}

/* A slow tool: busy errors while it runs, then an abort from another thread. */
typedef struct {
    pi_agent *agent;
    atomic_int started;
    atomic_int saw_abort;
    atomic_int returned;
    atomic_int wait_refused;
} slow_state;

static int32_t slow_tool(void *user_data, pi_tool_call *call) {
    slow_state *s = user_data;
    /* Waiting for its own agent from inside its tool would deadlock: refused. */
    pi_error *err = pi_agent_wait_for_idle(s->agent);
    if (err != NULL && pi_error_get_kind(err) == PI_ERROR_KIND_CALLED_FROM_CALLBACK) {
        atomic_store(&s->wait_refused, 1);
    }
    pi_error_free(err);
    atomic_store(&s->started, 1);
    for (int i = 0; i < 10000 && !pi_tool_call_is_aborted(call); i++) sleep_ms(1);
    if (pi_tool_call_is_aborted(call)) atomic_store(&s->saw_abort, 1);
    OK(pi_tool_call_set_text(call, "finished (kept only if it returned before the abort)"));
    atomic_store(&s->returned, 1);
    return 0;
}

typedef struct {
    pi_agent *agent;
    const char *text;
    pi_error *result;
} prompt_job;

static void *run_prompt(void *arg) {
    prompt_job *job = arg;
    job->result = pi_agent_prompt(job->agent, job->text);
    return NULL;
}

static void test_busy_and_abort(void) {
    pi_faux *faux = NULL;
    OK(pi_faux_new(&faux));
    OK(pi_faux_push_json(faux, "{\"content\":[{\"type\":\"toolCall\",\"id\":\"s1\",\"name\":\"slow\","
                               "\"arguments\":{}}]}"));
    OK(pi_faux_push_json(faux, "{\"content\":\"never reached\"}"));
    pi_model *model = NULL;
    OK(pi_faux_model(faux, &model));
    pi_agent *agent = NULL;
    OK(pi_agent_new(model, "", NULL, &agent));
    pi_model_free(model);
    static slow_state state;
    state.agent = agent;
    OK(pi_agent_add_tool(agent, "slow", "Takes its time", "{\"type\":\"object\"}", slow_tool,
                         &state, NULL));

    prompt_job job = {agent, "Run the slow tool", NULL};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, run_prompt, &job) == 0);
    CHECK(wait_for(&state.started));
    CHECK(pi_agent_is_streaming(agent));
    CHECK(atomic_load(&state.wait_refused) == 1);

    expect_error(pi_agent_prompt(agent, "Are you there?"), PI_ERROR_KIND_ALREADY_RUNNING,
                 "Agent is already processing a prompt. Use steer() or followUp() to queue "
                 "messages, or wait for completion.",
                 __LINE__);
    expect_error(pi_agent_continue(agent), PI_ERROR_KIND_ALREADY_RUNNING,
                 "Agent is already processing. Wait for completion before continuing.", __LINE__);

    pi_agent_abort(agent);
    CHECK(pthread_join(thread, NULL) == 0);
    OK(job.result); /* an aborted run is not an error */
    OK(pi_agent_wait_for_idle(agent));
    CHECK(!pi_agent_is_streaming(agent));
    CHECK(wait_for(&state.returned));
    CHECK(atomic_load(&state.saw_abort) == 1);

    char *json = messages_json(agent);
    CHECK(count(json, "\"type\":\"toolCall\"") == 1);
    CHECK(count(json, "\"role\":\"toolResult\"") == 1);
    CHECK(strstr(json, "\"toolCallId\":\"s1\"") != NULL);
    /* The run stops waiting for the tool at the abort; if the tool returned at that very
     * moment, its own result may be kept instead. */
    CHECK(strstr(json, "Tool execution was aborted") != NULL ||
          strstr(json, "finished (kept only if it returned before the abort") != NULL);
    CHECK(strstr(json, "never reached") == NULL);
    pi_string_free(json);
    CHECK(pi_faux_pending(faux) == 1);

    pi_agent_free(agent);
    pi_faux_free(faux);
}

/* A tool callback may block on other pi objects: this one streams from a second model. */
static int32_t ask_expert(void *user_data, pi_tool_call *call) {
    pi_model *expert = user_data;
    pi_stream *stream = NULL;
    OK(pi_stream_open(expert, "{\"messages\":[{\"role\":\"user\",\"content\":\"6*7?\","
                              "\"timestamp\":0}]}",
                      NULL, &stream));
    char text[128] = "";
    pi_event event;
    while (pi_stream_next(stream, &event)) {
        if (event.kind == PI_STREAM_EVENT_KIND_TEXT_DELTA && strlen(text) + event.delta.len < sizeof text) {
            strncat(text, event.delta.data, event.delta.len);
        }
    }
    pi_stream_free(stream);
    OK(pi_tool_call_set_text(call, text));
    return 0;
}

static void free_model(void *model) { pi_model_free(model); }

static void test_nested_blocking(void) {
    pi_faux *faux = NULL, *expert_faux = NULL;
    OK(pi_faux_new(&faux));
    OK(pi_faux_new(&expert_faux));
    OK(pi_faux_push_json(faux, "[{\"content\":[{\"type\":\"toolCall\",\"id\":\"e1\","
                               "\"name\":\"ask_expert\",\"arguments\":{}}]},"
                               "{\"content\":\"The expert says 42.\"}]"));
    OK(pi_faux_push_json(expert_faux, "{\"content\":\"forty-two\"}"));
    pi_model *model = NULL, *expert = NULL;
    OK(pi_faux_model(faux, &model));
    OK(pi_faux_model(expert_faux, &expert));
    pi_agent *agent = NULL;
    OK(pi_agent_new(model, "", NULL, &agent));
    OK(pi_agent_add_tool(agent, "ask_expert", "Asks another model", "{\"type\":\"object\"}",
                         ask_expert, expert, free_model));
    pi_model_free(model);
    OK(pi_agent_prompt(agent, "Ask the expert"));
    char *json = messages_json(agent);
    CHECK(strstr(json, "\"text\":\"forty-two\"") != NULL);
    CHECK(strstr(json, "The expert says 42.") != NULL);
    pi_string_free(json);
    pi_agent_free(agent); /* frees `expert` through free_user_data */
    pi_faux_free(expert_faux);
    pi_faux_free(faux);
}

/* AI-level pull streaming. */
typedef struct {
    pi_stream *stream;
} abort_job;

static void *abort_later(void *arg) {
    abort_job *job = arg;
    sleep_ms(20);
    pi_stream_abort(job->stream);
    return NULL;
}

static const char *CONTEXT =
    "{\"systemPrompt\":\"Be brief.\",\"messages\":[{\"role\":\"user\",\"content\":\"Say hello\","
    "\"timestamp\":0}]}";

/* Reads a stream to its end; returns the terminal kind, with the text deltas in `text`. Each
 * event's JSON is asked for (pi_stream_event_json); `eager` says whether the stream was set to
 * fill `event.json` itself (pi_stream_set_event_json), which is otherwise empty. */
static pi_stream_event_kind drain_events(pi_stream *stream, char *text, size_t size, int eager) {
    pi_event event;
    pi_stream_event_kind last = PI_STREAM_EVENT_KIND_NONE;
    int events = 0;
    text[0] = '\0';
    while (pi_stream_next(stream, &event)) {
        CHECK(last != PI_STREAM_EVENT_KIND_DONE && last != PI_STREAM_EVENT_KIND_ERROR);
        if (eager) {
            CHECK(event.json.len > 0);
        } else {
            CHECK(event.json.len == 0);
        }
        pi_str json = pi_stream_event_json(stream);
        CHECK(json.len > 0 && json.data[0] == '{');
        /* Written once per event: the same text every time, and the one `event.json` shows. */
        CHECK(pi_stream_event_json(stream).data == json.data);
        CHECK(!eager || (event.json.data == json.data && event.json.len == json.len));
        if (event.kind == PI_STREAM_EVENT_KIND_TEXT_DELTA) {
            CHECK(str_contains(json, "\"type\":\"text_delta\""));
            CHECK(strlen(text) + event.delta.len < size);
            strncat(text, event.delta.data, event.delta.len);
        } else if (event.kind != PI_STREAM_EVENT_KIND_THINKING_DELTA &&
                   event.kind != PI_STREAM_EVENT_KIND_TOOLCALL_DELTA) {
            CHECK(event.delta.len == 0);
        }
        /* A terminal event's JSON carries the whole message. */
        if (event.kind == PI_STREAM_EVENT_KIND_DONE) {
            CHECK(str_contains(json, "{\"type\":\"done\",\"reason\":\"stop\",\"message\":{"));
            CHECK(str_contains(json, text));
        } else if (event.kind == PI_STREAM_EVENT_KIND_ERROR) {
            CHECK(str_contains(json, "\"type\":\"error\""));
            CHECK(str_contains(json, "\"errorMessage\":"));
        }
        last = event.kind;
        events++;
    }
    CHECK(events > 0);
    CHECK(!pi_stream_next(stream, &event)); /* stays ended */
    /* The last event's JSON stays readable after the end. */
    CHECK(pi_stream_event_json(stream).len > 0);
    return last;
}

static pi_stream_event_kind drain(pi_stream *stream, char *text, size_t size) {
    return drain_events(stream, text, size, 0);
}

static char *stream_result(pi_stream *stream) {
    char *json = NULL;
    OK(pi_stream_result_json(stream, &json));
    CHECK(json != NULL);
    return json;
}

static void test_stream_faux(void) {
    pi_faux *faux = NULL;
    OK(pi_faux_new(&faux));
    const char *reply = "Hello from the faux stream, one small delta at a time.";
    char script[256];
    snprintf(script, sizeof script, "{\"content\":\"%s\"}", reply);
    OK(pi_faux_push_json(faux, script));
    pi_model *model = NULL;
    OK(pi_faux_model(faux, &model));

    pi_stream *stream = NULL;
    EXPECT_ERROR(pi_stream_open(model, "{\"messages\":42}", NULL, &stream),
                 PI_ERROR_KIND_INVALID_JSON);
    EXPECT_ERROR(pi_stream_open(model, CONTEXT, "{\"apiKye\":\"x\"}", &stream),
                 PI_ERROR_KIND_INVALID_JSON);
    EXPECT_ERROR(pi_stream_open(NULL, CONTEXT, NULL, &stream), PI_ERROR_KIND_NULL_ARGUMENT);
    CHECK(stream == NULL);
    OK(pi_stream_open(model, CONTEXT, "{\"temperature\":0.2,\"maxTokens\":50}", &stream));
    char text[512];
    CHECK(drain(stream, text, sizeof text) == PI_STREAM_EVENT_KIND_DONE);
    CHECK(strcmp(text, reply) == 0);
    char *json = stream_result(stream);
    CHECK(strstr(json, "\"stopReason\":\"stop\"") != NULL);
    CHECK(strstr(json, reply) != NULL);
    pi_string_free(json);
    pi_stream_free(stream);

    /* Events carry their JSON only when asked, or when the stream is set to fill it. */
    OK(pi_faux_push_json(faux, script));
    OK(pi_stream_open(model, CONTEXT, NULL, &stream));
    CHECK(pi_stream_event_json(stream).len == 0); /* no event yet */
    pi_stream_set_event_json(stream, true);
    CHECK(drain_events(stream, text, sizeof text, 1) == PI_STREAM_EVENT_KIND_DONE);
    CHECK(strcmp(text, reply) == 0);
    json = stream_result(stream);
    CHECK(strstr(json, reply) != NULL);
    pi_string_free(json);
    pi_stream_free(stream);
    CHECK(pi_stream_event_json(NULL).len == 0);
    pi_stream_set_event_json(NULL, true);

    /* With nothing scripted, the stream ends with an error event, not a pi_error. */
    OK(pi_stream_open(model, CONTEXT, NULL, &stream));
    CHECK(drain(stream, text, sizeof text) == PI_STREAM_EVENT_KIND_ERROR);
    json = stream_result(stream);
    CHECK(strstr(json, "\"stopReason\":\"error\"") != NULL);
    CHECK(strstr(json, "No more faux responses queued") != NULL);
    pi_string_free(json);
    pi_stream_free(stream);

    /* pi_stream_result_json before the end waits for it. */
    OK(pi_faux_push_json(faux, script));
    OK(pi_stream_open(model, CONTEXT, NULL, &stream));
    json = stream_result(stream);
    CHECK(strstr(json, reply) != NULL);
    pi_string_free(json);
    pi_event event;
    CHECK(!pi_stream_next(stream, &event));
    pi_stream_free(stream);

    /* Freeing a stream that was never read is fine. */
    OK(pi_faux_push_json(faux, script));
    OK(pi_stream_open(model, CONTEXT, NULL, &stream));
    pi_stream_free(stream);
    pi_model_free(model);
    pi_faux_free(faux);

    /* Abort from another thread while a slow (paced) faux response streams. */
    OK(pi_faux_new_with_options("{\"provider\":\"slow-faux\",\"models\":[\"slow-1\"],"
                                "\"tokensPerSecond\":50,\"tokenSize\":{\"min\":1,\"max\":1}}",
                                &faux));
    OK(pi_faux_push_json(faux, "{\"content\":\"This reply is long enough to take a few seconds "
                               "to stream at fifty tokens per second, so the abort lands in "
                               "the middle of it.\"}"));
    OK(pi_faux_model(faux, &model));
    CHECK(str_eq(pi_model_provider(model), "slow-faux"));
    CHECK(str_eq(pi_model_id(model), "slow-1"));
    OK(pi_stream_open(model, CONTEXT, NULL, &stream));
    abort_job job = {stream};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, abort_later, &job) == 0);
    CHECK(drain(stream, text, sizeof text) == PI_STREAM_EVENT_KIND_ERROR);
    CHECK(pthread_join(thread, NULL) == 0);
    json = stream_result(stream);
    CHECK(strstr(json, "\"stopReason\":\"aborted\"") != NULL);
    pi_string_free(json);
    pi_stream_free(stream);
    pi_model_free(model);
    pi_faux_free(faux);
}

/* ------------------------------------------------ pi_stream_try_next */

/* A wake callback: one byte into the pipe whose write end `user_data` points to. */
static void wake_pipe(void *user_data) {
    int fd = *(const int *)user_data;
    char byte = 1;
    CHECK(write(fd, &byte, 1) == 1);
}

static atomic_int wakes;

static void count_wake(void *user_data) {
    (void)user_data;
    atomic_fetch_add(&wakes, 1);
}

/* Waits until the pipe has a byte (at most 20 s), then empties it. */
static void wait_for_wake(int read_fd) {
    struct pollfd ready = {.fd = read_fd, .events = POLLIN};
    CHECK(poll(&ready, 1, 20000) == 1);
    char bytes[64];
    CHECK(read(read_fd, bytes, sizeof bytes) > 0);
}

/* One stream read with pi_stream_try_next, as an event loop reads it. */
typedef struct {
    pi_stream *stream;
    char text[512];
    pi_stream_event_kind last;
    int pending;
    int ended;
} polled;

/* Takes every event `p->stream` has now; returns 1 when it answered PENDING (and will call
 * `wake_pipe` with `write_fd`), 0 once it has ended. */
static int take_ready(polled *p, int *write_fd) {
    pi_event event;
    for (;;) {
        pi_poll answer = pi_stream_try_next(p->stream, &event, wake_pipe, write_fd);
        if (answer == PI_POLL_END) {
            CHECK(p->last == PI_STREAM_EVENT_KIND_DONE || p->last == PI_STREAM_EVENT_KIND_ERROR);
            p->ended = 1;
            return 0;
        }
        if (answer == PI_POLL_PENDING) {
            p->pending++;
            return 1;
        }
        CHECK(answer == PI_POLL_EVENT);
        CHECK(p->last != PI_STREAM_EVENT_KIND_DONE && p->last != PI_STREAM_EVENT_KIND_ERROR);
        if (event.kind == PI_STREAM_EVENT_KIND_TEXT_DELTA) {
            CHECK(strlen(p->text) + event.delta.len < sizeof p->text);
            strncat(p->text, event.delta.data, event.delta.len);
        }
        p->last = event.kind;
    }
}

/* An agent's event callback that tries to read another stream: refused, and the stream is
 * left as it was (its pi_stream_try_next registration kept). */
static atomic_int stream_reads_refused;

static void read_stream_in_callback(void *user_data, const pi_agent_event *event) {
    if (event->kind != PI_AGENT_EVENT_KIND_AGENT_START) return;
    pi_stream *held = user_data;
    pi_event ev;
    CHECK(!pi_stream_next(held, &ev));
    char *json = NULL;
    EXPECT_ERROR(pi_stream_result_json(held, &json), PI_ERROR_KIND_CALLED_FROM_CALLBACK);
    CHECK(json == NULL);
    atomic_fetch_add(&stream_reads_refused, 1);
}

static void test_stream_try_next(void) {
    int fds[2];
    CHECK(pipe(fds) == 0);
    const char *reply = "Read from an event loop, without a thread per stream.";
    char script[256];
    snprintf(script, sizeof script, "{\"content\":\"%s\"}", reply);
    pi_event event;
    CHECK(pi_stream_try_next(NULL, &event, NULL, NULL) == PI_POLL_END);

    /* Unpaced: the same events as pi_stream_next, then END for good. */
    pi_faux *faux = NULL;
    OK(pi_faux_new(&faux));
    pi_model *model = NULL;
    OK(pi_faux_model(faux, &model));
    OK(pi_faux_push_json(faux, script));
    polled one = {0};
    OK(pi_stream_open(model, CONTEXT, NULL, &one.stream));
    CHECK(pi_stream_try_next(one.stream, NULL, NULL, NULL) == PI_POLL_END); /* NULL event_out */
    while (take_ready(&one, &fds[1])) wait_for_wake(fds[0]);
    CHECK(one.last == PI_STREAM_EVENT_KIND_DONE);
    CHECK(strcmp(one.text, reply) == 0);
    CHECK(pi_stream_try_next(one.stream, &event, wake_pipe, &fds[1]) == PI_POLL_END);
    CHECK(!pi_stream_next(one.stream, &event));
    char *json = stream_result(one.stream);
    CHECK(strstr(json, reply) != NULL);
    pi_string_free(json);
    pi_stream_free(one.stream);

    /* The two reads mix on one stream: the first event polled, the rest blocking. */
    OK(pi_faux_push_json(faux, script));
    polled mixed = {0};
    OK(pi_stream_open(model, CONTEXT, NULL, &mixed.stream));
    pi_poll answer;
    while ((answer = pi_stream_try_next(mixed.stream, &event, NULL, NULL)) == PI_POLL_PENDING)
        sleep_ms(1);
    CHECK(answer == PI_POLL_EVENT && event.kind == PI_STREAM_EVENT_KIND_START);
    char text[512];
    CHECK(drain(mixed.stream, text, sizeof text) == PI_STREAM_EVENT_KIND_DONE);
    CHECK(strcmp(text, reply) == 0);
    pi_stream_free(mixed.stream);
    pi_model_free(model);
    pi_faux_free(faux);

    /* Paced streams, all read from this one thread through one pipe. */
    OK(pi_faux_new_with_options("{\"provider\":\"paced-faux\",\"models\":[\"paced-1\"],"
                                "\"tokensPerSecond\":400,\"tokenSize\":{\"min\":1,\"max\":1}}",
                                &faux));
    OK(pi_faux_model(faux, &model));
    enum { STREAMS = 8 };
    polled streams[STREAMS];
    memset(streams, 0, sizeof streams);
    for (int i = 0; i < STREAMS; i++) {
        OK(pi_faux_push_json(faux, script));
        OK(pi_stream_open(model, CONTEXT, NULL, &streams[i].stream));
    }
    int open = STREAMS;
    while (open > 0) {
        open = 0;
        for (int i = 0; i < STREAMS; i++)
            if (!streams[i].ended) open += take_ready(&streams[i], &fds[1]);
        if (open > 0) wait_for_wake(fds[0]);
    }
    int pending = 0;
    for (int i = 0; i < STREAMS; i++) {
        CHECK(streams[i].last == PI_STREAM_EVENT_KIND_DONE);
        CHECK(strcmp(streams[i].text, reply) == 0);
        pending += streams[i].pending;
        pi_stream_free(streams[i].stream);
    }
    CHECK(pending > STREAMS); /* paced: they did wait */

    /* After pi_stream_free, a pending stream's wake is not called any more. */
    OK(pi_faux_push_json(faux, script));
    pi_stream *stream = NULL;
    OK(pi_stream_open(model, CONTEXT, NULL, &stream));
    while ((answer = pi_stream_try_next(stream, &event, count_wake, NULL)) == PI_POLL_EVENT) {
    }
    CHECK(answer == PI_POLL_PENDING);
    pi_stream_free(stream);
    int after_free = atomic_load(&wakes);

    /* Reads refused inside an event callback take nothing: the pending registration stays,
     * so the event loop is still woken when the stream has more. */
    OK(pi_faux_push_json(faux, script));
    pi_stream *held = NULL;
    OK(pi_stream_open(model, CONTEXT, NULL, &held));
    while ((answer = pi_stream_try_next(held, &event, wake_pipe, &fds[1])) == PI_POLL_EVENT) {
    }
    CHECK(answer == PI_POLL_PENDING);
    pi_faux *agent_faux = NULL;
    OK(pi_faux_new(&agent_faux));
    OK(pi_faux_push_json(agent_faux, "{\"content\":\"hi\"}"));
    pi_model *agent_model = NULL;
    OK(pi_faux_model(agent_faux, &agent_model));
    pi_agent *agent = NULL;
    OK(pi_agent_new(agent_model, "", NULL, &agent));
    uint64_t subscription = 0;
    OK(pi_agent_subscribe(agent, read_stream_in_callback, held, NULL, &subscription));
    OK(pi_agent_prompt(agent, "go"));
    CHECK(atomic_load(&stream_reads_refused) == 1);
    wait_for_wake(fds[0]); /* the registration made before the callback still wakes */
    pi_agent_free(agent);
    pi_model_free(agent_model);
    pi_faux_free(agent_faux);
    pi_stream_free(held);
    sleep_ms(100); /* the paced provider would have sent several deltas by now */
    CHECK(atomic_load(&wakes) == after_free);
    pi_model_free(model);
    pi_faux_free(faux);
    close(fds[0]);
    close(fds[1]);
}

/* --------------------------------------------------------- mock server */

static pi_model *mock_model(const char *base_url) {
    char json[512];
    snprintf(json, sizeof json,
             "{\"id\":\"mock-model\",\"name\":\"Mock\",\"api\":\"openai-completions\","
             "\"provider\":\"mock\",\"baseUrl\":\"%s\",\"contextWindow\":8192,\"maxTokens\":1024}",
             base_url);
    pi_model *model = NULL;
    OK(pi_model_from_json(json, &model));
    return model;
}

static void test_mock(const char *base_url) {
    pi_model *model = mock_model(base_url);
    pi_stream *stream = NULL;
    char text[512];

    /* 1. A text reply. */
    OK(pi_stream_open(model, CONTEXT, "{\"apiKey\":\"test-key\"}", &stream));
    CHECK(drain(stream, text, sizeof text) == PI_STREAM_EVENT_KIND_DONE);
    CHECK(strcmp(text, "Hello from the mock server!") == 0);
    char *json = stream_result(stream);
    CHECK(strstr(json, "\"stopReason\":\"stop\"") != NULL);
    CHECK(strstr(json, "\"provider\":\"mock\"") != NULL);
    pi_string_free(json);
    pi_stream_free(stream);

    /* 2. HTTP 401 with a JSON error body: an error event with the provider's message. */
    OK(pi_stream_open(model, CONTEXT, NULL, &stream));
    CHECK(drain(stream, text, sizeof text) == PI_STREAM_EVENT_KIND_ERROR);
    json = stream_result(stream);
    CHECK(strstr(json, "\"stopReason\":\"error\"") != NULL);
    CHECK(strstr(json, "Incorrect API key provided") != NULL);
    CHECK(strstr(json, "401") != NULL);
    pi_string_free(json);
    pi_stream_free(stream);

    /* 3. The connection drops mid-stream: an error event keeping the partial text. */
    OK(pi_stream_open(model, CONTEXT, NULL, &stream));
    CHECK(drain(stream, text, sizeof text) == PI_STREAM_EVENT_KIND_ERROR);
    json = stream_result(stream);
    CHECK(strstr(json, "\"stopReason\":\"error\"") != NULL);
    CHECK(strstr(json, "\"errorMessage\":\"") != NULL);
    pi_string_free(json);
    pi_stream_free(stream);

    /* 4 + 5. An agent with the C calculator over HTTP. */
    pi_agent *agent = NULL;
    OK(pi_agent_new(model, "You are a calculator.", "{\"streamOptions\":{\"apiKey\":\"test-key\"}}",
                    &agent));
    static atomic_int calls;
    OK(pi_agent_add_tool(agent, "calculator", "Evaluates a op b", CALCULATOR_SCHEMA, calculator,
                         &calls, NULL));
    OK(pi_agent_prompt(agent, "What is 6 * 7?"));
    CHECK(atomic_load(&calls) == 1);
    json = messages_json(agent);
    CHECK(strstr(json, "\"text\":\"42\"") != NULL);
    CHECK(strstr(json, "The answer is 42.") != NULL);
    pi_string_free(json);
    CHECK(pi_agent_error_message(agent) == NULL);
    pi_agent_free(agent);
    pi_model_free(model);
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "faux") == 0) {
        test_version();
        test_arguments();
        test_agent_with_tool();
        test_tool_errors();
        test_busy_and_abort();
        test_nested_blocking();
        test_stream_faux();
        test_stream_try_next();
    } else if (argc >= 3 && strcmp(argv[1], "mock") == 0) {
        test_version();
        test_mock(argv[2]);
    } else {
        fprintf(stderr, "usage: %s faux | mock BASE_URL\n", argv[0]);
        return 2;
    }
    printf("ffi_test %s: ok\n", argv[1]);
    return 0;
}
