// An agent with a calculator tool answers "What is 6 * 7?" by calling the tool: the C example
// (examples/c/agent.c) in C++17, through a small RAII wrapper over pi_agent.h.
//
// Build against an installed library (scripts/install-c.sh --prefix DIR; set
// PKG_CONFIG_PATH=DIR/lib/pkgconfig for a prefix pkg-config does not search), with pkg-config:
//
//   c++ -std=c++17 -Wall -Wextra -Werror examples/cpp/agent.cpp
//       $(pkg-config --cflags --libs pi_agent) -o agent_cpp
//
// (add -Wl,-rpath,DIR/lib, or set LD_LIBRARY_PATH, when DIR/lib is not in the loader's path),
// or with CMake: examples/cpp/CMakeLists.txt (find_package(pi_agent)).
//
// Run offline (a scripted faux model calls the calculator, then answers): ./agent_cpp
// Against a real model, as for the C example: PI_MODEL=openai/gpt-4o-mini OPENAI_API_KEY=...,
// or PI_MODEL_JSON='{...pi model JSON...}', and optionally PI_API_KEY.

#include <pi_agent.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace pi {

// A failed call: the library's error kind and message.
class Error : public std::runtime_error {
public:
    Error(pi_error_kind kind, const std::string &message)
        : std::runtime_error(message), kind_(kind) {}
    pi_error_kind kind() const noexcept { return kind_; }

private:
    pi_error_kind kind_;
};

inline std::string_view view(pi_str s) { return {s.data, s.len}; }

// Frees `error` and throws it as pi::Error; does nothing on success (NULL).
inline void check(pi_error *error) {
    if (error == nullptr) return;
    const pi_error_kind kind = pi_error_get_kind(error);
    std::string message(view(pi_error_message(error)));
    pi_error_free(error);
    throw Error(kind, message);
}

// unique_ptr deleters for the library's handles and owned strings.
template <typename T, void (*Free)(T *)>
struct Deleter {
    void operator()(T *handle) const noexcept { Free(handle); }
};
using Model = std::unique_ptr<pi_model, Deleter<pi_model, pi_model_free>>;
using Faux = std::unique_ptr<pi_faux, Deleter<pi_faux, pi_faux_free>>;
using OwnedString = std::unique_ptr<char, Deleter<char, pi_string_free>>;

inline std::string take(char *owned) {
    OwnedString guard(owned);
    return guard ? std::string(guard.get()) : std::string();
}

// A tool: takes the arguments JSON, returns the text the model reads; throwing makes the call
// an error result with the exception's message.
using ToolFunction = std::function<std::string(std::string_view arguments_json)>;
using EventFunction = std::function<void(const pi_agent_event &event)>;

class Agent {
public:
    Agent(const pi_model &model, const std::string &system_prompt, const std::string &options_json) {
        check(pi_agent_new(&model, system_prompt.c_str(), options_json.c_str(), &agent_));
    }
    ~Agent() { pi_agent_free(agent_); }  // waits for callbacks, frees their std::functions
    Agent(const Agent &) = delete;
    Agent &operator=(const Agent &) = delete;

    void add_tool(const std::string &name, const std::string &description,
                  const std::string &parameters_json_schema, ToolFunction function) {
        auto *owned = new ToolFunction(std::move(function));
        pi_error *error = pi_agent_add_tool(agent_, name.c_str(), description.c_str(),
                                            parameters_json_schema.c_str(), &call_tool, owned,
                                            &destroy<ToolFunction>);
        if (error != nullptr) delete owned;  // not registered: the library will not free it
        check(error);
    }

    std::uint64_t subscribe(EventFunction function) {
        auto *owned = new EventFunction(std::move(function));
        std::uint64_t subscription = 0;
        pi_error *error = pi_agent_subscribe(agent_, &deliver, owned, &destroy<EventFunction>,
                                             &subscription);
        if (error != nullptr) delete owned;
        check(error);
        return subscription;
    }

    void prompt(const std::string &text) { check(pi_agent_prompt(agent_, text.c_str())); }

    // Why the last run failed, or "" when it did not.
    std::string error_message() const { return take(pi_agent_error_message(agent_)); }

    std::string messages_json() const {
        char *json = nullptr;
        check(pi_agent_messages_json(agent_, &json));
        return take(json);
    }

private:
    // Callbacks run on the library's threads and must not throw into C.
    static std::int32_t call_tool(void *user_data, pi_tool_call *call) noexcept {
        try {
            auto &function = *static_cast<ToolFunction *>(user_data);
            const std::string text = function(view(pi_tool_call_arguments_json(call)));
            pi_error_free(pi_tool_call_set_text(call, text.c_str()));
            return 0;
        } catch (const std::exception &exception) {
            pi_error_free(pi_tool_call_set_error(call, exception.what()));
        } catch (...) {
            pi_error_free(pi_tool_call_set_error(call, "unknown C++ exception"));
        }
        return 1;
    }

    static void deliver(void *user_data, const pi_agent_event *event) noexcept {
        try {
            (*static_cast<EventFunction *>(user_data))(*event);
        } catch (...) {
            // A subscriber's failure must not end the run; this example has nothing to add.
        }
    }

    template <typename T>
    static void destroy(void *user_data) noexcept {
        delete static_cast<T *>(user_data);
    }

    pi_agent *agent_ = nullptr;
};

}  // namespace pi

namespace {

// Finds "key":"value" in a flat JSON object (a real program would use a JSON parser).
std::string string_field(std::string_view json, std::string_view key) {
    const std::string needle = "\"" + std::string(key) + "\":\"";
    const auto start = json.find(needle);
    if (start == std::string_view::npos) return {};
    const auto begin = start + needle.size();
    const auto end = json.find('"', begin);
    return end == std::string_view::npos ? std::string() : std::string(json.substr(begin, end - begin));
}

// Evaluates "a op b" for + - * /.
double evaluate(const std::string &expression) {
    std::istringstream in(expression);
    double a = 0;
    double b = 0;
    char op = 0;
    if (!(in >> a >> op >> b)) throw std::invalid_argument("expected \"a op b\"");
    switch (op) {
    case '+': return a + b;
    case '-': return a - b;
    case '*': return a * b;
    case '/':
        if (b == 0) throw std::domain_error("division by zero");
        return a / b;
    default: throw std::invalid_argument("op must be one of + - * /");
    }
}

std::string format(double value) {
    char text[64];
    std::snprintf(text, sizeof text, "%g", value);
    return text;
}

const char *environment(const char *name) {
    const char *value = std::getenv(name);
    return value != nullptr && value[0] != '\0' ? value : nullptr;
}

}  // namespace

int main() {
    try {
        std::cout << "pi_agent " << pi_version() << " (header " << PI_AGENT_VERSION_MAJOR << '.'
                  << PI_AGENT_VERSION_MINOR << '.' << PI_AGENT_VERSION_PATCH << ")\n";
        pi::Faux faux;
        pi::Model model;
        pi_model *raw = nullptr;
        if (const char *spec = environment("PI_MODEL")) {
            pi::check(pi_model_resolve(spec, &raw));
            model.reset(raw);
        } else if (const char *json = environment("PI_MODEL_JSON")) {
            pi::check(pi_model_from_json(json, &raw));
            model.reset(raw);
        } else {
            // Offline: a faux model scripted to call the calculator, then to answer.
            pi_faux *raw_faux = nullptr;
            pi::check(pi_faux_new(&raw_faux));
            faux.reset(raw_faux);
            pi::check(pi_faux_push_json(
                faux.get(), R"({"content":[{"type":"toolCall","id":"call_1","name":"calculator",)"
                            R"("arguments":{"expression":"6 * 7"}}]})"));
            pi::check(pi_faux_push_json(faux.get(), R"({"content":"6 * 7 is 42."})"));
            pi::check(pi_faux_model(faux.get(), &raw));
            model.reset(raw);
        }
        std::cout << "model: " << pi::view(pi_model_id(model.get())) << '\n';

        std::string options = "{}";
        if (const char *key = environment("PI_API_KEY")) {
            if (std::string_view(key).find('"') == std::string_view::npos) {
                options = std::string(R"({"streamOptions":{"apiKey":")") + key + "\"}}";
            }
        }
        pi::Agent agent(*model, "You are a careful assistant. Use the calculator for arithmetic.",
                        options);
        agent.add_tool(
            "calculator", "Evaluates \"a op b\" for op in + - * /",
            R"({"type":"object","properties":{"expression":{"type":"string",)"
            R"("description":"e.g. 6 * 7"}},"required":["expression"]})",
            [](std::string_view arguments) {
                const std::string expression = string_field(arguments, "expression");
                const std::string result = format(evaluate(expression));
                std::cout << "[calculator] " << expression << " = " << result << '\n';
                return result;
            });

        // Events arrive one at a time, in order, on a library thread.
        bool mid_line = false;
        agent.subscribe([&mid_line](const pi_agent_event &event) {
            if (event.kind == PI_AGENT_EVENT_KIND_MESSAGE_UPDATE &&
                event.message_event_kind == PI_STREAM_EVENT_KIND_TEXT_DELTA) {
                if (!mid_line) std::cout << "assistant: ";
                std::cout << pi::view(event.delta) << std::flush;
                mid_line = true;
            } else if (event.kind == PI_AGENT_EVENT_KIND_MESSAGE_END && mid_line) {
                std::cout << '\n';
                mid_line = false;
            } else if (event.kind == PI_AGENT_EVENT_KIND_TOOL_EXECUTION_START) {
                std::cout << "[tool call] " << pi::view(event.json) << '\n';
            }
        });

        std::cout << "user: What is 6 * 7?\n";
        agent.prompt("What is 6 * 7?");
        const std::string failure = agent.error_message();
        if (!failure.empty()) {
            std::cerr << "the run failed: " << failure << '\n';
            return 1;
        }
        std::cout << "transcript: " << agent.messages_json().size() << " bytes of JSON\n";
        return 0;
    } catch (const pi::Error &error) {
        std::cerr << "pi_agent error " << error.kind() << ": " << error.what() << '\n';
    } catch (const std::exception &error) {
        std::cerr << "error: " << error.what() << '\n';
    }
    return 1;
}
