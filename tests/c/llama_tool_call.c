/*
 * An agent turn with a C tool against a real llama-server, run by
 * ffi/tests/llama_server_tools.rs: the server (with scripts/llama-server/tool-call.jinja)
 * answers with a tool call, the C tool runs, its result goes back and the model answers.
 * The requests ask tool_choice "required" (from the options JSON) and an on_payload callback
 * switches that to "none" once a tool result is sent (openai-completions, openai-responses).
 *
 *   llama_tool_call MODEL_JSON OPTIONS_JSON
 *
 * Prints "TOOL <arguments JSON>" per tool call, "PAYLOAD <body JSON>" per request as sent, and
 * "MESSAGES <transcript JSON>" at the end; exits non-zero when a call of the API fails.
 */
#define _POSIX_C_SOURCE 200809L

#include "test_support.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *REQUIRED = "\"tool_choice\":\"required\"";
static const char *NONE = "\"tool_choice\":\"none\"";

static int32_t get_weather(void *user_data, pi_tool_call *call) {
    (void)user_data;
    pi_str args = pi_tool_call_arguments_json(call);
    printf("TOOL %.*s\n", (int)args.len, args.data);
    fflush(stdout);
    OK(pi_tool_call_set_text(call, "Sunny, 21 degrees"));
    return 0;
}

/* The body is core's compact JSON: the last `"role":` names the last message. */
static void on_payload(void *user_data, pi_on_payload *payload) {
    (void)user_data;
    pi_str body = pi_on_payload_json(payload);
    char *text = malloc(body.len + 1);
    CHECK(text != NULL);
    memcpy(text, body.data, body.len);
    text[body.len] = '\0';
    const char *last_role = NULL;
    for (const char *at = strstr(text, "\"role\":\""); at != NULL; at = strstr(at + 1, "\"role\":\"")) {
        last_role = at + strlen("\"role\":\"");
    }
    char *required = strstr(text, REQUIRED);
    /* Chat Completions: the last message is a tool result; Responses: an input item is. */
    bool after_result = (last_role != NULL && strncmp(last_role, "tool\"", 5) == 0) ||
                        strstr(text, "\"type\":\"function_call_output\"") != NULL;
    if (after_result && required != NULL) {
        /* "none" is shorter than "required": write it and close the gap. */
        size_t tail = strlen(required + strlen(REQUIRED));
        memcpy(required, NONE, strlen(NONE));
        memmove(required + strlen(NONE), required + strlen(REQUIRED), tail + 1);
        OK(pi_on_payload_set_json(payload, text));
    }
    printf("PAYLOAD %s\n", text);
    fflush(stdout);
    free(text);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s MODEL_JSON OPTIONS_JSON\n", argv[0]);
        return 2;
    }
    pi_model *model = NULL;
    OK(pi_model_from_json(argv[1], &model));
    pi_agent *agent = NULL;
    OK(pi_agent_new(model, "", NULL, &agent));
    OK(pi_agent_add_tool(agent, "get_weather", "Get the weather for a city",
                         "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},"
                         "\"required\":[\"city\"]}",
                         get_weather, NULL, NULL));
    pi_stream_options *options = NULL;
    OK(pi_stream_options_from_json(argv[2], &options));
    OK(pi_stream_options_set_on_payload(options, on_payload, NULL, NULL));
    OK(pi_agent_set_stream_options(agent, options));
    pi_stream_options_free(options);

    OK(pi_agent_prompt(agent, "What is the weather in Paris? Use the tool."));
    char *messages = NULL;
    OK(pi_agent_messages_json(agent, &messages));
    printf("MESSAGES %s\n", messages);
    pi_string_free(messages);
    pi_agent_free(agent);
    pi_model_free(model);
    return 0;
}
