#pragma once
// Text helpers the wrapper parser (wrapper/wrapper.cpp) is built from, the
// parser of the generated input checks, and the reader of one call site
// (wrapper/wrapper_call_sites.cpp).

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/cpp_text.hpp"
#include "wrapper/wrapper.hpp"

namespace aoti_bisect::wrapper_text {

// The C++ text toolkit (common/cpp_text.hpp), under the names this parser uses.
using cpp_text::closing_bracket;
using cpp_text::is_ident_char;
using cpp_text::split_lines;
using cpp_text::without_comments;

// The identifier that starts at `pos` (empty if none).
using cpp_text::ident_at;  // the identifier that starts at `pos` (common/cpp_text)
// `prefix` + an identifier directly followed by '(' in `line`: that identifier.
std::optional<std::string> called_ident_with_prefix(std::string_view line, std::string_view prefix);
std::optional<int64_t> parse_int(std::string_view s);
// The lines [first, last) of the body of the function whose header line holds `marker`.
std::pair<size_t, size_t> function_range(const std::vector<std::string_view>& lines, std::string_view marker);
// "output_handles[2] = buf4.release();" -> (2, "buf4"); a name declared as a
// view of another (`auto var_0 = ...reinterpret_tensor_wrapper(buf5, ...)`)
// is resolved through `views`; "" where the handle is released from no plain name.
std::optional<std::pair<size_t, std::string>> output_release(std::string_view t,
                                                             const std::map<std::string, std::string>& views);
// "auto var_0 = wrap_with_raii_handle_if_needed(reinterpret_tensor_wrapper(buf5, 3, ...));" -> (var_0, buf5).
std::optional<std::pair<std::string, std::string>> view_declaration(std::string_view t);
// The model's inputs from steal_from_raw_handles_to_raii_handles and the generated check_input_<i> functions.
void parse_inputs(const std::vector<std::string_view>& lines, size_t run_first, size_t run_last, WrapperInfo& info);

// The cpp kernels the source declares, on one line or (CPP GEMM templates) over two.
std::set<std::string> cpp_kernel_names(const std::vector<std::string_view>& lines, const std::string& source);
// The call site that line `i` (trimmed: `t`) starts, with its arguments (read
// across lines to the call's closing parenthesis), list elements, returned
// buffers and subgraph; its index, line and preceding comments left unset.
std::optional<CallSite> read_call_site(const std::vector<std::string_view>& lines, size_t i, std::string_view t,
                                       const std::set<std::string>& cpp_kernels);
// Each call site's `in_out_ptr` argument positions (CallSite::in_out), from
// the cpp kernels' declarations and the Triton kernels' launches in `source`.
void note_in_out_arguments(WrapperInfo& info, const std::string& source);

}  // namespace aoti_bisect::wrapper_text
