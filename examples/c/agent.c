/*
 * An agent with a calculator tool answers "What is 6 * 7?" by calling the tool.
 *
 * Build against the installed library (`scripts/install-c.sh --prefix DIR`; set
 * PKG_CONFIG_PATH=DIR/lib/pkgconfig for a prefix pkg-config does not search), from the
 * repository root:
 *
 *   cc -Wall -Wextra -Werror -std=c11 examples/c/agent.c $(pkg-config --cflags --libs pi_agent) \
 *      -o agent
 *
 * (add -Wl,-rpath,DIR/lib, or set LD_LIBRARY_PATH, when DIR/lib is not in the loader's path),
 * or with CMake: examples/cpp/CMakeLists.txt (find_package(pi_agent)) builds it too.
 *
 * Run offline (a scripted faux model calls the calculator, then answers):
 *
 *   ./agent
 *
 * Run against a real model: name a catalog model in PI_MODEL ("provider/model-id"), or put a
 * pi model JSON in PI_MODEL_JSON (any endpoint), and the provider's key in its usual variable
 * (e.g. OPENAI_API_KEY), or in PI_API_KEY:
 *
 *   PI_MODEL=openai/gpt-4o-mini OPENAI_API_KEY=sk-... ./agent
 *   PI_MODEL_JSON='{"id":"llama3","api":"openai-completions","provider":"ollama",
 *                   "baseUrl":"http://localhost:11434/v1"}' ./agent
 */
#define _POSIX_C_SOURCE 200809L

#include "pi_agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints the error (if any) and exits. */
static void check(pi_error *err, const char *what) {
    if (err == NULL) return;
    pi_str message = pi_error_message(err);
    fprintf(stderr, "%s failed: %.*s\n", what, (int)message.len, message.data);
    pi_error_free(err);
    exit(1);
}

/* Evaluates "a op b" for + - * /. Returns 0 on success. */
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
    case '/':
        if (b == 0) return -1;
        *result = a / b;
        return 0;
    default: return -1;
    }
}

/* The calculator tool. Its arguments are {"expression": "6 * 7"} (validated by the schema). */
static int32_t calculator(void *user_data, pi_tool_call *call) {
    (void)user_data;
    pi_str args = pi_tool_call_arguments_json(call);
    char json[512];
    snprintf(json, sizeof json, "%.*s", (int)args.len, args.data);
    /* A real program would use a JSON parser; this finds "expression":"...". */
    const char *start = strstr(json, "\"expression\":\"");
    char expression[256] = "";
    if (start != NULL) {
        start += strlen("\"expression\":\"");
        const char *end = strchr(start, '"');
        if (end != NULL && (size_t)(end - start) < sizeof expression) {
            memcpy(expression, start, (size_t)(end - start));
            expression[end - start] = '\0';
        }
    }
    double value;
    if (evaluate(expression, &value) != 0) {
        pi_error_free(pi_tool_call_set_error(call, "expected \"a op b\" with op one of + - * /"));
        return 1;
    }
    char text[64];
    snprintf(text, sizeof text, "%g", value);
    printf("[calculator] %s = %s\n", expression, text);
    pi_error_free(pi_tool_call_set_text(call, text));
    return 0;
}

/* A before_tool_call hook: lets the application check every tool call before it runs (here it
 * only logs it; pi_before_tool_call_block would refuse it, with a reason the model reads). It
 * runs on a runtime thread, like the tool itself. */
static int32_t approve(void *user_data, pi_before_tool_call *context) {
    (void)user_data;
    pi_str name = pi_before_tool_call_name(context);
    pi_str args = pi_before_tool_call_arguments_json(context);
    printf("[approve] %.*s %.*s\n", (int)name.len, name.data, (int)args.len, args.data);
    return 0;
}

/* Prints the answer as it streams, and the tool calls as they start. Events arrive one at a
 * time, in order, on a runtime thread. */
static void on_event(void *user_data, const pi_agent_event *event) {
    int *mid_line = user_data;
    if (event->kind == PI_AGENT_EVENT_KIND_MESSAGE_UPDATE &&
        event->message_event_kind == PI_STREAM_EVENT_KIND_TEXT_DELTA) {
        if (!*mid_line) printf("assistant: ");
        fwrite(event->delta.data, 1, event->delta.len, stdout);
        fflush(stdout);
        *mid_line = 1;
    } else if (event->kind == PI_AGENT_EVENT_KIND_MESSAGE_END && *mid_line) {
        printf("\n");
        *mid_line = 0;
    } else if (event->kind == PI_AGENT_EVENT_KIND_TOOL_EXECUTION_START) {
        printf("[tool call] %.*s\n", (int)event->json.len, event->json.data);
    }
}

int main(void) {
    pi_model *model = NULL;
    pi_faux *faux = NULL;
    const char *model_spec = getenv("PI_MODEL");
    const char *model_json = getenv("PI_MODEL_JSON");
    if (model_spec != NULL && model_spec[0] != '\0') {
        check(pi_model_resolve(model_spec, &model), "pi_model_resolve");
    } else if (model_json != NULL && model_json[0] != '\0') {
        check(pi_model_from_json(model_json, &model), "pi_model_from_json");
    } else {
        /* Offline: a faux model scripted to call the calculator, then to answer. */
        check(pi_faux_new(&faux), "pi_faux_new");
        check(pi_faux_push_json(faux, "{\"content\":[{\"type\":\"toolCall\",\"id\":\"call_1\","
                                      "\"name\":\"calculator\",\"arguments\":{\"expression\":"
                                      "\"6 * 7\"}}]}"),
              "pi_faux_push_json");
        check(pi_faux_push_json(faux, "{\"content\":\"6 * 7 is 42.\"}"), "pi_faux_push_json");
        check(pi_faux_model(faux, &model), "pi_faux_model");
    }
    pi_str id = pi_model_id(model);
    printf("model: %.*s\n", (int)id.len, id.data);

    /* Options: an API key from PI_API_KEY, if set (else the provider's own variable). */
    char options[512] = "{}";
    const char *key = getenv("PI_API_KEY");
    if (key != NULL && key[0] != '\0' && strlen(key) < 400 && strchr(key, '"') == NULL) {
        snprintf(options, sizeof options, "{\"streamOptions\":{\"apiKey\":\"%s\"}}", key);
    }

    pi_agent *agent = NULL;
    check(pi_agent_new(model, "You are a careful assistant. Use the calculator for arithmetic.",
                       options, &agent),
          "pi_agent_new");
    pi_model_free(model);
    check(pi_agent_add_tool(agent, "calculator", "Evaluates \"a op b\" for op in + - * /",
                            "{\"type\":\"object\",\"properties\":{\"expression\":{\"type\":"
                            "\"string\",\"description\":\"e.g. 6 * 7\"}},\"required\":["
                            "\"expression\"]}",
                            calculator, NULL, NULL),
          "pi_agent_add_tool");
    check(pi_agent_set_before_tool_call(agent, approve, NULL, NULL),
          "pi_agent_set_before_tool_call");
    static int mid_line = 0;
    uint64_t subscription;
    check(pi_agent_subscribe(agent, on_event, &mid_line, NULL, &subscription),
          "pi_agent_subscribe");

    printf("user: What is 6 * 7?\n");
    check(pi_agent_prompt(agent, "What is 6 * 7?"), "pi_agent_prompt");

    int status = 0;
    char *error = pi_agent_error_message(agent);
    if (error != NULL) {
        fprintf(stderr, "the run failed: %s\n", error);
        pi_string_free(error);
        status = 1;
    }
    pi_agent_free(agent);
    pi_faux_free(faux);
    return status;
}
