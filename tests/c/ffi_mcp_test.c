/*
 * C test of the MCP client (pi_mcp_server_*), run by ffi/tests/c_programs.rs against the
 * official reference server (@modelcontextprotocol/server-everything) the test installed:
 * connect over stdio (JSON config and the short form) and Streamable HTTP, read the server's
 * info and tools as JSON, add its tools to an agent on the faux provider and run it end to end,
 * the environment a stdio server inherits ("inheritEnv"), and a server that cannot start
 * failing with PI_ERROR_KIND_MCP naming it.
 *
 *   ffi_mcp_test <server-everything/dist/index.js> <http://127.0.0.1:PORT/mcp>
 *
 * Exits 0 when every check passed; on the first failed check it prints it and exits 1.
 */
#define _POSIX_C_SOURCE 200809L

#include "test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static void test_info_and_tools(pi_mcp_server *server) {
    char *info = NULL;
    OK(pi_mcp_server_info_json(server, &info));
    CHECK(strstr(info, "\"protocolVersion\"") != NULL);
    CHECK(strstr(info, "\"capabilities\"") != NULL);
    pi_string_free(info);
    char *tools = NULL;
    OK(pi_mcp_server_list_tools_json(server, &tools));
    CHECK(strstr(tools, "\"name\":\"echo\"") != NULL);
    CHECK(strstr(tools, "\"inputSchema\"") != NULL);
    pi_string_free(tools);
}

/* An agent on faux whose model calls `echo` (with `prefix`) and then answers. */
static void test_agent_run(pi_mcp_server *server, const char *expected_tool) {
    pi_faux *faux = NULL;
    pi_model *model = NULL;
    OK(pi_faux_new(&faux));
    char script[512];
    snprintf(script, sizeof script,
             "[{\"content\":[{\"type\":\"toolCall\",\"id\":\"m1\",\"name\":\"%s\","
             "\"arguments\":{\"message\":\"from C\"}}]},{\"content\":\"done\"}]",
             expected_tool);
    OK(pi_faux_push_json(faux, script));
    OK(pi_faux_model(faux, &model));
    pi_agent *agent = NULL;
    OK(pi_agent_new(model, "", NULL, &agent));
    OK(pi_mcp_server_add_tools_to_agent(server, agent));
    OK(pi_agent_prompt(agent, "echo something"));
    char *messages = NULL;
    OK(pi_agent_messages_json(agent, &messages));
    CHECK(strstr(messages, "\"role\":\"toolResult\"") != NULL);
    CHECK(strstr(messages, "Echo: from C") != NULL);
    CHECK(strstr(messages, "\"isError\":false") != NULL);
    CHECK(strstr(messages, "\"mcpServer\"") != NULL);
    pi_string_free(messages);
    pi_agent_free(agent);
    pi_model_free(model);
    pi_faux_free(faux);
}

/* The environment a stdio server gets: the host's marker variable (set in main) only
 * with "inheritEnv":true; PATH always. Read through the server's `get-env` tool. */
static void test_environment(const char *entry, int inherit) {
    char config[1024];
    snprintf(config, sizeof config,
             "{\"name\":\"env\",\"transport\":\"stdio\",\"command\":\"node\","
             "\"args\":[\"%s\",\"stdio\"],\"includeTools\":[\"get-env\"],"
             "\"env\":{\"PI_C_GIVEN\":\"given-value\"}%s}",
             entry, inherit ? ",\"inheritEnv\":true" : "");
    pi_mcp_server *server = NULL;
    OK(pi_mcp_server_connect(config, &server));
    pi_faux *faux = NULL;
    pi_model *model = NULL;
    OK(pi_faux_new(&faux));
    OK(pi_faux_push_json(faux, "[{\"content\":[{\"type\":\"toolCall\",\"id\":\"e1\","
                               "\"name\":\"get-env\",\"arguments\":{}}]},{\"content\":\"ok\"}]"));
    OK(pi_faux_model(faux, &model));
    pi_agent *agent = NULL;
    OK(pi_agent_new(model, "", NULL, &agent));
    OK(pi_mcp_server_add_tools_to_agent(server, agent));
    OK(pi_agent_prompt(agent, "show the environment"));
    char *messages = NULL;
    OK(pi_agent_messages_json(agent, &messages));
    CHECK(strstr(messages, "PI_C_GIVEN") != NULL);
    CHECK(strstr(messages, "given-value") != NULL);
    CHECK(strstr(messages, "PATH") != NULL);
    CHECK((strstr(messages, "host-marker-value") != NULL) == (inherit != 0));
    pi_string_free(messages);
    pi_agent_free(agent);
    pi_model_free(model);
    pi_faux_free(faux);
    pi_mcp_server_free(server);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: ffi_mcp_test <server-everything index.js> <http url>\n");
        return 2;
    }
    const char *entry = argv[1];
    const char *url = argv[2];

    /* stdio, from a JSON config with a prefix and a filter */
    char config[1024];
    snprintf(config, sizeof config,
             "{\"name\":\"everything\",\"transport\":\"stdio\",\"command\":\"node\","
             "\"args\":[\"%s\",\"stdio\"],\"toolPrefix\":\"ev_\",\"includeTools\":[\"echo\"]}",
             entry);
    pi_mcp_server *server = NULL;
    OK(pi_mcp_server_connect(config, &server));
    test_info_and_tools(server);
    test_agent_run(server, "ev_echo");
    pi_mcp_server_free(server);

    /* what a stdio server inherits: a host variable only with "inheritEnv" */
    setenv("PI_C_HOST_MARKER", "host-marker-value", 1);
    test_environment(entry, 0);
    test_environment(entry, 1);

    /* stdio, the short form */
    const char *args[] = {entry, "stdio"};
    server = NULL;
    OK(pi_mcp_server_connect_stdio("everything", "node", args, 2, &server));
    test_agent_run(server, "echo");
    pi_mcp_server_free(server);

    /* Streamable HTTP, with a header */
    server = NULL;
    OK(pi_mcp_server_connect_http("everything-http", url,
                                  "{\"Authorization\":\"Bearer c-secret\"}", &server));
    test_info_and_tools(server);
    test_agent_run(server, "echo");
    pi_mcp_server_free(server);

    /* failures are errors naming the server; arguments are checked */
    pi_mcp_server *none = NULL;
    pi_error *err = pi_mcp_server_connect_stdio("missing", "/nonexistent/server", NULL, 0, &none);
    CHECK(err != NULL && pi_error_get_kind(err) == PI_ERROR_KIND_MCP);
    CHECK(str_contains(pi_error_message(err), "\"missing\" failed to start"));
    pi_error_free(err);
    CHECK(none == NULL);
    EXPECT_ERROR(pi_mcp_server_connect("{\"name\":\"x\"}", &none), PI_ERROR_KIND_INVALID_JSON);
    EXPECT_ERROR(pi_mcp_server_connect(NULL, &none), PI_ERROR_KIND_NULL_ARGUMENT);
    /* A malformed configuration's error does not quote its values (headers hold keys). */
    err = pi_mcp_server_connect("{\"name\":\"x\",\"transport\":\"http\",\"url\":\"http://h/mcp\","
                                "\"headers\":\"Authorization: Bearer c-json-secret\"}",
                                &none);
    CHECK(err != NULL && pi_error_get_kind(err) == PI_ERROR_KIND_INVALID_JSON);
    CHECK(!str_contains(pi_error_message(err), "c-json-secret"));
    pi_error_free(err);
    err = pi_mcp_server_connect_http("x", "http://h/mcp", "[\"Bearer c-json-secret\"]", &none);
    CHECK(err != NULL && pi_error_get_kind(err) == PI_ERROR_KIND_INVALID_JSON);
    CHECK(!str_contains(pi_error_message(err), "c-json-secret"));
    pi_error_free(err);
    EXPECT_ERROR(pi_mcp_server_connect_stdio("x", "node", NULL, 1, &none),
                 PI_ERROR_KIND_NULL_ARGUMENT);
    err = pi_mcp_server_connect_http("bad", "http://127.0.0.1:1/mcp", "{\"Authorization\":\"Bearer c-secret\"}", &none);
    CHECK(err != NULL && pi_error_get_kind(err) == PI_ERROR_KIND_MCP);
    CHECK(!str_contains(pi_error_message(err), "c-secret"));
    pi_error_free(err);
    pi_mcp_server_free(NULL);

    printf("ffi_mcp_test: ok\n");
    return 0;
}
