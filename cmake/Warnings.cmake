# Warnings apply to our own targets only: call gamefn_warnings(target).
function(gamefn_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
    -Wformat=2 -Wno-format-zero-length -Wno-unused-parameter -Wvla -Wpointer-arith -Wcast-qual)
  target_compile_definitions(${target} PRIVATE _POSIX_C_SOURCE=200809L _DEFAULT_SOURCE)
endfunction()
