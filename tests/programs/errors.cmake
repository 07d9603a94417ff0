# The bad-input table of docs/errors.md: every kind of bad input tried on each program, with the exit
# code and message it gets. One errors_case() per row of the table; each runs through the runner of
# tests/programs/eqsat_run.cmake (exit code, and a regex on stderr or stdout).
#
# This file has two roles: included by tests/CMakeLists.txt it registers the cases, and the test
# errors.table_matches_docs; run with `cmake -P` (CASES=<generated list>, DOC=docs/errors.md) it checks that
# the table and the cases agree: every case has exactly one row, every row names a case, and each row's
# program, exit code and message match the case (the message shown must match the case's regex).
if(CMAKE_SCRIPT_MODE_FILE)
  cmake_minimum_required(VERSION 3.25)  # script mode: policies (IN_LIST) as in the project
  set(_names "")
  function(errors_case_def name program rc stream regex)  # a function: a macro would re-parse the regex
    set(_names ${_names} ${name} PARENT_SCOPE)
    set(_program_${name} "${program}" PARENT_SCOPE)
    set(_rc_${name} "${rc}" PARENT_SCOPE)
    set(_regex_${name} "${regex}" PARENT_SCOPE)
  endfunction()
  include(${CASES})
  file(READ "${DOC}" doc)
  # One list element per line: protect the characters that CMake lists treat specially.
  string(REPLACE ";" "<semicolon>" doc "${doc}")
  string(REPLACE "[" "<lbracket>" doc "${doc}")
  string(REPLACE "]" "<rbracket>" doc "${doc}")
  string(REPLACE "\n" ";" lines "${doc}")
  set(errors "")
  set(seen "")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^\\|.*`errors\\.")  # table rows that name a test
      continue()
    endif()
    # | program | bad input | input | exit | `message` [(stdout)] | `errors.NAME` |
    if(NOT line MATCHES "^\\| *([a-z-]+) *\\|[^|]*\\|[^|]*\\| *([0-9]+) *\\| *`([^`]*)`[^|]*\\| *`errors\\.([a-z0-9_]+)` *\\| *$")
      list(APPEND errors "row not in the form | program | kind | input | exit | `message` | `errors.NAME` |: ${line}")
      continue()
    endif()
    set(program "${CMAKE_MATCH_1}")
    set(rc "${CMAKE_MATCH_2}")
    set(msg "${CMAKE_MATCH_3}")
    set(name "${CMAKE_MATCH_4}")
    string(REPLACE "<semicolon>" ";" msg "${msg}")
    string(REPLACE "<lbracket>" "[" msg "${msg}")
    string(REPLACE "<rbracket>" "]" msg "${msg}")
    if(NOT DEFINED _rc_${name})
      list(APPEND errors "docs row names errors.${name}, which tests/programs/errors.cmake does not define")
      continue()
    endif()
    if(name IN_LIST seen)
      list(APPEND errors "errors.${name} has two rows")
    endif()
    list(APPEND seen ${name})
    if(NOT program STREQUAL _program_${name})
      list(APPEND errors "errors.${name}: the row says ${program}, the test runs ${_program_${name}}")
    endif()
    if(NOT rc STREQUAL _rc_${name})
      list(APPEND errors "errors.${name}: the row says exit ${rc}, the test expects ${_rc_${name}}")
    endif()
    if(NOT msg MATCHES "${_regex_${name}}")
      list(APPEND errors "errors.${name}: the row's message '${msg}' does not match the test's '${_regex_${name}}'")
    endif()
  endforeach()
  foreach(name IN LISTS _names)
    if(NOT name IN_LIST seen)
      list(APPEND errors "errors.${name} has no row in ${DOC}")
    endif()
  endforeach()
  list(LENGTH _names count)
  if(errors)
    string(REPLACE ";" "\n  " errors "${errors}")
    message(FATAL_ERROR "docs/errors.md and tests/programs/errors.cmake disagree:\n  ${errors}")
  endif()
  message("docs/errors.md: ${count} rows, each with its test")
  return()
endif()

if(NOT TARGET eqsat-run OR NOT TARGET ruleverify OR NOT TARGET rulegen)
  return()
endif()

set(ERRORS_RUNNER ${CMAKE_CURRENT_LIST_DIR}/eqsat_run.cmake)
set(ERRORS_CASES_FILE ${CMAKE_CURRENT_BINARY_DIR}/errors_cases.cmake)
set(ERRORS_WORK ${CMAKE_CURRENT_BINARY_DIR}/errors)
file(MAKE_DIRECTORY ${ERRORS_WORK})
set(B ${PROJECT_SOURCE_DIR}/tests/programs/bad_inputs)
set(W ${ERRORS_WORK})
set(MLP ${PROJECT_SOURCE_DIR}/corpus/models/mlp.onnx)
set(SYMBOLIC ${PROJECT_SOURCE_DIR}/tests/python/data/symbolic_dim.onnx)
set(SMALL ${PROJECT_SOURCE_DIR}/tests/python/rules_small.json)
set(OK_RULES --rules ${SMALL} --cost flops)
set(_errors_defs "")

# errors_case(NAME PROGRAM RC STREAM REGEX ARG...): PROGRAM ARG... exits with RC and prints a line matching
# REGEX on STREAM (stderr or stdout). ERRORS_EXTRA, when set, passes more runner checks (EXPECT_IDENTICAL, ...).
function(errors_case name program rc stream regex)
  string(REPLACE ";" "|" args "${ARGN}")
  if(stream STREQUAL "stdout")
    set(expect "-DEXPECT_OUT=${regex}")
  else()
    set(expect "-DEXPECT_MSG=${regex}")
  endif()
  add_test(NAME errors.${name}
           COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:${program}> "-DARGS=${args}" -DEXPECT_RC=${rc} "${expect}"
                   ${ERRORS_EXTRA} -P ${ERRORS_RUNNER})
  set_tests_properties(errors.${name} PROPERTIES TIMEOUT 120 LABELS errors)
  set(_errors_defs "${_errors_defs}errors_case_def(${name} ${program} ${rc} ${stream} [==[${regex}]==])\n" PARENT_SCOPE)
endfunction()

# --- eqsat-run ---------------------------------------------------------------------------------------------
errors_case(eqsat_run_missing_model eqsat-run 2 stderr "eqsat-run: error: .*nope\\.onnx: no such file"
            ${W}/nope.onnx ${OK_RULES})
errors_case(eqsat_run_missing_rules eqsat-run 2 stderr "eqsat-run: error: rule file .*nope\\.json: no such file"
            ${MLP} --rules ${W}/nope.json)
errors_case(eqsat_run_empty_model eqsat-run 2 stderr "eqsat-run: error: .*empty\\.onnx: empty file, not an ONNX model"
            ${B}/empty.onnx ${OK_RULES})
errors_case(eqsat_run_empty_rules eqsat-run 2 stderr
            "eqsat-run: error: .*empty\\.json: empty file, no rules" ${MLP} --rules ${B}/empty.json)
errors_case(eqsat_run_wrong_format_model eqsat-run 2 stderr
            "eqsat-run: error: .*rules_small\\.json: not an ONNX model" ${SMALL} ${OK_RULES})
errors_case(eqsat_run_wrong_format_rules eqsat-run 2 stderr "eqsat-run: error: .*mlp\\.onnx: not a TASO rule collection"
            ${MLP} --rules ${MLP})
errors_case(eqsat_run_truncated_model eqsat-run 2 stderr
            "eqsat-run: error: .*truncated\\.onnx: not an ONNX model \\(protobuf parsing failed: the file is truncated"
            ${B}/truncated.onnx ${OK_RULES})
errors_case(eqsat_run_truncated_rules eqsat-run 2 stderr "eqsat-run: error: .*truncated\\.json: not valid JSON: .*parse error"
            ${MLP} --rules ${B}/truncated.json)
errors_case(eqsat_run_unknown_operator eqsat-run 2 stderr
            "eqsat-run: error: .*node 'frob' \\(Frobnicate\\): 'Frobnicate' is not an operator of ONNX opset 13"
            ${B}/unknown_op.onnx ${OK_RULES})
errors_case(eqsat_run_unknown_operator_rule eqsat-run 2 stderr
            "eqsat-run: error: .*rule 'unknown-op': lhs\\[0\\]: line 1, column 2: unknown operator 'frobnicate'"
            ${MLP} --rules ${B}/unknown_op.json)
errors_case(eqsat_run_wrong_arity eqsat-run 2 stderr
            "eqsat-run: error: .*node 'relu2' \\(Relu\\) does not fit its ONNX schema: .*input size 2 not in range"
            ${B}/wrong_arity.onnx ${OK_RULES})
errors_case(eqsat_run_wrong_arity_rule eqsat-run 2 stderr "eqsat-run: error: .*relu expects 1 operands, got 2"
            ${MLP} --rules ${B}/wrong_arity.json)
errors_case(eqsat_run_shape_mismatch eqsat-run 2 stderr
            "eqsat-run: error: .*ONNX shape inference failed: .*MatMul.*Incompatible dimensions for matrix multiplication"
            ${B}/shape_mismatch.onnx ${OK_RULES})
errors_case(eqsat_run_cyclic_graph eqsat-run 2 stderr
            "eqsat-run: error: .*node 'r1' \\(Relu\\) reads 'b' before node 'r2' \\(Relu\\) computes it: the graph has a cycle"
            ${B}/cyclic.onnx ${OK_RULES})
errors_case(eqsat_run_cyclic_rule eqsat-run 0 stderr "stop reason: saturated"
            ${MLP} --rules ${B}/cyclic_rule.json --cost flops -o ${W}/cyclic_rule.onnx)
errors_case(eqsat_run_let_cycle_rule eqsat-run 2 stderr "eqsat-run: error: .*unknown name 'a' \\(not bound by an earlier let\\)"
            ${MLP} --rules ${B}/let_cycle.json)
errors_case(eqsat_run_bare_variable_rule eqsat-run 2 stderr
            "eqsat-run: error: .*rule 'bare-variable': lhs\\[0\\]: a bare variable matches everything"
            ${MLP} --rules ${B}/bare_variable.json)
errors_case(eqsat_run_huge_dimension eqsat-run 2 stderr
            "eqsat-run: error: .*tensor 'x' of shape \\[2147483648,2147483648,4\\] has more than 2\\^40 elements"
            ${B}/huge_dim.onnx ${OK_RULES})
errors_case(eqsat_run_huge_dim_value eqsat-run 2 stderr
            "eqsat-run: error: .*tensor 'x' of shape \\[1099511627776,3\\] has more than 2\\^40 elements"
            ${SYMBOLIC} ${OK_RULES} --dim batch=1099511627776)
errors_case(eqsat_run_huge_dim_overflow eqsat-run 2 stderr
            "eqsat-run: error: --dim batch=99999999999999999999: the value does not fit in 64 bits"
            ${SYMBOLIC} ${OK_RULES} --dim batch=99999999999999999999)
errors_case(eqsat_run_negative_attribute eqsat-run 2 stderr
            "eqsat-run: error: .*node 'conv' \\(Conv\\): attribute 'strides' holds -1. it must be >= 1"
            ${B}/negative_stride.onnx ${OK_RULES})
errors_case(eqsat_run_negative_dim eqsat-run 2 stderr "eqsat-run: error: --dim batch=-4: a dimension must be at least 1"
            ${SYMBOLIC} ${OK_RULES} --dim batch=-4)
errors_case(eqsat_run_unknown_target eqsat-run 2 stderr
            "eqsat-run: error: --target: unknown target 'h100'; valid: auto, cpu, cuda, .*h200"
            ${MLP} --rules ${SMALL} --target h100)
# --target cuda needs the GPU it names: on a machine without one (CI's) it is an error naming the GPU targets.
execute_process(COMMAND nvidia-smi -L RESULT_VARIABLE _no_gpu OUTPUT_QUIET ERROR_QUIET)
if(_no_gpu)
  errors_case(eqsat_run_target_cuda_without_gpu eqsat-run 2 stderr
              "eqsat-run: error: --target: cuda: no GPU found on this machine; name the GPU the model will run on \\(a100, h200, t4, v100\\)"
              ${MLP} --rules ${SMALL} --target cuda)
endif()
errors_case(eqsat_run_target_and_cost eqsat-run 2 stderr "--target excludes --cost"
            ${MLP} --rules ${SMALL} --target cpu --cost flops)
errors_case(eqsat_run_min_gain_out_of_range eqsat-run 2 stderr "--min-gain: Value 1.5 not in range"
            ${MLP} ${OK_RULES} --min-gain 1.5)
errors_case(eqsat_run_negative_option eqsat-run 2 stderr "--node-limit: must be a number >= 0, got -5"
            ${MLP} ${OK_RULES} --node-limit -5)
errors_case(eqsat_run_zero_max_graphs eqsat-run 2 stderr "--max-graphs: must be a number > 0, got 0"
            ${MLP} ${OK_RULES} --search sequential --max-graphs 0)
errors_case(eqsat_run_conflicting_model eqsat-run 2 stderr "eqsat-run: error: give either a model file or --model NAME"
            ${MLP} --model squeezenet ${OK_RULES})
errors_case(eqsat_run_conflicting_export eqsat-run 2 stderr "--export excludes --output"
            --model squeezenet --export ${W}/squeezenet.onnx -o ${W}/squeezenet.opt.onnx)
# The check decides what -o gets (docs/eqsat-run.md, "--check"): a model it finds different or cannot
# evaluate is never written; the output path gets the input byte for byte.
set(OPAQUE ${PROJECT_SOURCE_DIR}/corpus/models/opaque_ops.onnx)
set(WRONG_RULE --rules ${PROJECT_SOURCE_DIR}/tests/data/wrong_rule.json --cost flops)
set(ERRORS_EXTRA "-DEXPECT_IDENTICAL=${W}/opaque_required.onnx|${OPAQUE}")
errors_case(eqsat_run_check_not_run eqsat-run 4 stderr
            "eqsat-run: error: --check could not run: cannot evaluate: the model contains operator Resize"
            ${OPAQUE} ${WRONG_RULE} --check -o ${W}/opaque_required.onnx)
set(ERRORS_EXTRA "-DEXPECT_IDENTICAL=${W}/opaque_default.onnx|${OPAQUE}")
errors_case(eqsat_run_check_not_run_default eqsat-run 0 stderr
            "kept the input model: the check could not run, so nothing vouches for the optimized model"
            ${OPAQUE} ${WRONG_RULE} -o ${W}/opaque_default.onnx)
set(ERRORS_EXTRA "-DEXPECT_IDENTICAL=${W}/mlp_rejected.onnx|${MLP}")
errors_case(eqsat_run_check_rejects eqsat-run 5 stderr
            "eqsat-run: error: optimization rejected: the check found the optimized model computing other values \\(max abs diff"
            ${MLP} ${WRONG_RULE} -o ${W}/mlp_rejected.onnx)
set(ERRORS_EXTRA "-DEXPECT_DIFFERENT=${W}/mlp_unchecked.onnx|${MLP}")
errors_case(eqsat_run_no_check eqsat-run 0 stderr "not checked \\(--no-check\\)"
            ${MLP} ${WRONG_RULE} --no-check -o ${W}/mlp_unchecked.onnx)
set(ERRORS_EXTRA "")
errors_case(eqsat_run_check_and_no_check eqsat-run 2 stderr "--check excludes --no-check"
            ${MLP} ${OK_RULES} --check --no-check)
set(DATA ${PROJECT_SOURCE_DIR}/tests/python/data)
errors_case(eqsat_run_unsupported_opset eqsat-run 2 stderr
            "eqsat-run: error: .*opset22\\.onnx: unsupported opset 22 \\(supported: 7 to 21\\)" ${DATA}/opset22.onnx ${OK_RULES})
errors_case(eqsat_run_dim_unknown_input eqsat-run 2 stderr
            "eqsat-run: error: .*--dim nope:0=2: the model has no graph input 'nope' \\(its inputs: x\\)"
            ${DATA}/unnamed_dim.onnx ${OK_RULES} --dim nope:0=2)
errors_case(eqsat_run_dim_axis_out_of_range eqsat-run 2 stderr
            "eqsat-run: error: .*--dim x:2=2: graph input 'x' has 2 dimensions, so the axis must be in -2\\.\\.1"
            ${DATA}/unnamed_dim.onnx ${OK_RULES} --dim x:2=2)
errors_case(eqsat_run_external_data_outside eqsat-run 2 stderr
            "eqsat-run: error: .*tensor 'w' keeps its data in '\\.\\./external_escape\\.bin', outside the model's folder"
            ${DATA}/external_escape.onnx ${OK_RULES})
errors_case(eqsat_run_external_data_short eqsat-run 2 stderr
            "eqsat-run: error: .*tensor 'w' needs 24 bytes at offset 0 of '.*external_short\\.bin', which holds only 8 bytes \\(too short\\)"
            ${DATA}/external_short.onnx ${OK_RULES})
errors_case(eqsat_run_bad_fused_entry eqsat-run 2 stderr
            "eqsat-run: error: --cost: .*bad_fused_entry\\.json: fused entry \"ort:FastLayerNorm\": not a fused unit key"
            ${MLP} --cost db:${B}/bad_fused_entry.json)

# --- ruleverify --------------------------------------------------------------------------------------------
errors_case(ruleverify_missing_file ruleverify 2 stderr "ruleverify: .*nope\\.json: cannot open file" ${W}/nope.json)
errors_case(ruleverify_no_file ruleverify 2 stderr "files is required")
errors_case(ruleverify_empty_file ruleverify 2 stderr "ruleverify: .*empty\\.txt: empty file, no rules" ${B}/empty.txt)
errors_case(ruleverify_wrong_format ruleverify 2 stderr "ruleverify: .*not_rules\\.txt: unrecognized rule format"
            ${B}/not_rules.txt)
errors_case(ruleverify_truncated_json ruleverify 2 stderr "ruleverify: .*truncated\\.json: not valid JSON: .*parse error"
            ${B}/truncated.json)
errors_case(ruleverify_truncated_text ruleverify 1 stderr
            "ruleverify: .*truncated\\.txt: skipped rule tensat-1: parse error at column 16: missing '\\)'"
            ${B}/truncated.txt --jobs 1)
errors_case(ruleverify_truncated_pb ruleverify 2 stderr
            "ruleverify: .*truncated\\.pb: not a TASO rule collection" ${B}/truncated.pb)
errors_case(ruleverify_unknown_operator ruleverify 2 stderr
            "ruleverify: .*rule 'unknown-op': lhs\\[0\\]: line 1, column 2: unknown operator 'frobnicate'"
            ${B}/unknown_op.json)
errors_case(ruleverify_unknown_operator_text ruleverify 1 stderr
            "ruleverify: .*unknown_op\\.txt: skipped rule tensat-1: unsupported Tensat operator 'frobnicate' \\(line 1\\)"
            ${B}/unknown_op.txt --jobs 1)
errors_case(ruleverify_wrong_arity ruleverify 2 stderr "ruleverify: .*rule 'wrong-arity': lhs\\[0\\]: .*relu expects 1 operands, got 2"
            ${B}/wrong_arity.json)
errors_case(ruleverify_shape_mismatch ruleverify 1 stdout "output 0: lhs has shape \\[2,4\\] but rhs has shape \\[4,2\\]"
            ${B}/shape_mismatch.json --jobs 1)
errors_case(ruleverify_cyclic_rule ruleverify 0 stdout "relu-grows +verified" ${B}/cyclic_rule.json --jobs 1)
errors_case(ruleverify_let_cycle ruleverify 2 stderr "ruleverify: .*unknown name 'a' \\(not bound by an earlier let\\)"
            ${B}/let_cycle.json)
errors_case(ruleverify_bare_variable ruleverify 2 stderr
            "ruleverify: .*rule 'bare-variable': lhs\\[0\\]: a bare variable matches everything" ${B}/bare_variable.json)
errors_case(ruleverify_huge_dimension ruleverify 1 stdout
            "huge-reshape +unknown .*no shape assignment in the rule's scope makes every pattern well-shaped" ${B}/huge_dim.json --jobs 1)
errors_case(ruleverify_negative_attribute ruleverify 1 stdout
            "negative-slice +unknown .*no shape assignment in the rule's scope makes every pattern well-shaped" ${B}/negative_attr.json --jobs 1)
errors_case(ruleverify_negative_option ruleverify 2 stderr "--jobs: Value -1 not in range 0 to 1024"
            ${SMALL} --jobs -1)
errors_case(ruleverify_removed_option ruleverify 2 stderr
            "ruleverify: --timeout-ms was removed: budgets are Z3 resource limits now, .*use --rlimit N" ${SMALL}
            --timeout-ms 60000)
errors_case(ruleverify_conflicting_update ruleverify 2 stderr
            "ruleverify: .*tensat_rules\\.txt: --update writes results into JSON corpora, and this is not one"
            ${B}/tensat_rules.txt --update)

# --- rulegen ----------------------------------------------------------------------------------------------
set(DERIVE derive --threads 1)
errors_case(rulegen_missing_file rulegen 2 stderr "--using: File does not exist: .*nope\\.json"
            ${DERIVE} --using ${W}/nope.json --target ${SMALL})
errors_case(rulegen_empty_file rulegen 2 stderr "rulegen: .*empty\\.json: empty file, no rules"
            ${DERIVE} --using ${B}/empty.json --target ${SMALL})
errors_case(rulegen_wrong_format rulegen 2 stderr "rulegen: .*not_rules\\.txt: unrecognized rule format"
            ${DERIVE} --using ${B}/not_rules.txt --target ${SMALL})
errors_case(rulegen_truncated rulegen 2 stderr "rulegen: .*truncated\\.json: not valid JSON: .*parse error"
            merge ${B}/truncated.json --out ${W}/merged.json)
errors_case(rulegen_unknown_operator rulegen 2 stderr "unknown operator 'frobnicate'"
            --ops matmul,frobnicate --out ${W}/bad.json)
errors_case(rulegen_unknown_operator_target rulegen 2 stderr
            "rulegen: .*rule 'unknown-op': lhs\\[0\\]: line 1, column 2: unknown operator 'frobnicate'"
            ${DERIVE} --using ${SMALL} --target ${B}/unknown_op.json)
errors_case(rulegen_wrong_arity rulegen 2 stderr "rulegen: .*rule 'wrong-arity': lhs\\[0\\]: .*relu expects 1 operands, got 2"
            ${DERIVE} --using ${SMALL} --target ${B}/wrong_arity.json)
# A rule not derived is named with its reason, and shown below it (what to look for in the corpus).
errors_case(rulegen_shape_mismatch rulegen 0 stdout
            "not derived: matmul-shape-wrong: .*iterations[)][^(]*[(]matmul 0 [?]a [(]transpose 1 0 [?]b[)][)]  =>  [(]matmul 0 [?]b"
            ${DERIVE} --using ${SMALL} --target ${B}/shape_mismatch.json)
errors_case(rulegen_cyclic_rule rulegen 0 stdout "derived 1/1 "
            ${DERIVE} --using ${SMALL} --target ${B}/cyclic_rule.json)
errors_case(rulegen_let_cycle rulegen 2 stderr "rulegen: .*unknown name 'a' \\(not bound by an earlier let\\)"
            ${DERIVE} --using ${SMALL} --target ${B}/let_cycle.json)
errors_case(rulegen_bare_variable rulegen 2 stderr "rulegen: .*rule 'bare-variable': lhs\\[0\\]: a bare variable matches everything"
            ${DERIVE} --using ${B}/bare_variable.json --target ${SMALL})
errors_case(rulegen_huge_dimension rulegen 0 stdout
            "not derived: huge-reshape: no leaf-type shapes make the rule well-shaped"
            ${DERIVE} --using ${SMALL} --target ${B}/huge_dim.json)
errors_case(rulegen_huge_option rulegen 2 stderr "--max-inputs: Value 100000 not in range 1 to 32"
            --max-inputs 100000 --out ${W}/bad.json)
errors_case(rulegen_negative_attribute rulegen 0 stdout
            "not derived: negative-slice: no leaf-type shapes make the rule well-shaped"
            ${DERIVE} --using ${SMALL} --target ${B}/negative_attr.json)
errors_case(rulegen_negative_option rulegen 2 stderr "--max-ops: Value -1 not in range 1 to 5"
            --max-ops -1 --out ${W}/bad.json)
errors_case(rulegen_conflicting_options rulegen 2 stderr
            "rulegen: --shard is a generation option. it cannot be combined with 'merge'"
            --shard 0/2 merge ${SMALL} --out ${W}/merged.json)

set(SHARDS ${PROJECT_SOURCE_DIR}/tests/data/shards)
errors_case(rulegen_merge_other_run rulegen 2 stderr
            "rulegen: .*shard_1_of_2_seed5\\.json: a shard of another run \\(max_ops 1, seed 5, 21 operators\\) than .*shard_0_of_2\\.json \\(max_ops 1, seed 7, 21 operators\\)"
            merge ${SHARDS}/shard_0_of_2.json ${SHARDS}/shard_1_of_2_seed5.json --out ${W}/merged_other.json)
errors_case(rulegen_merge_other_cap rulegen 2 stderr
            "rulegen: .*shard_1_of_2_cap5\\.json: a shard capped at 5 candidates, another at 200000"
            merge ${SHARDS}/shard_0_of_2.json ${SHARDS}/shard_1_of_2_cap5.json --out ${W}/merged_cap.json)

# The table in docs/errors.md must list exactly these cases.
file(WRITE ${ERRORS_CASES_FILE} "${_errors_defs}")
add_test(NAME errors.table_matches_docs
         COMMAND ${CMAKE_COMMAND} -DCASES=${ERRORS_CASES_FILE} -DDOC=${PROJECT_SOURCE_DIR}/docs/errors.md
                 -P ${CMAKE_CURRENT_LIST_FILE})
set_tests_properties(errors.table_matches_docs PROPERTIES LABELS errors)
