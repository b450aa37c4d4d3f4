# Run by every build of a ufuncgen_add_module target (ufuncgen.cmake), as
#
#   cmake -DOUTPUT=<digest file> -P ufuncgen_inputs.cmake -- <word or file>...
#
# Writes OUTPUT: each word given after `--` (the module's name, its source root), then the
# SHA-256 of each file given (the signature files, ufuncgen's generator, templates and
# headers).  OUTPUT is rewritten only when that text changed, so its date says when the
# generator's inputs last changed in content: an edited signature file whose date is older
# than the last build (restored from a backup, `cp -p`, `rsync -t`, untarred) still counts as
# changed, and a file touched without being changed does not.
cmake_minimum_required(VERSION 3.18)
if(NOT DEFINED OUTPUT)
  message(FATAL_ERROR "ufuncgen_inputs.cmake: -DOUTPUT=<file> is required")
endif()
set(content "")
set(listed FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  set(word "${CMAKE_ARGV${i}}")
  if(listed)
    if(EXISTS "${word}" AND NOT IS_DIRECTORY "${word}")
      file(SHA256 "${word}" hash)
      string(APPEND content "${hash}  ${word}\n")
    else()
      string(APPEND content "${word}\n")
    endif()
  elseif(word STREQUAL "--")
    set(listed TRUE)
  endif()
endforeach()
# file(CONFIGURE) leaves a file whose content is already this one untouched.
file(CONFIGURE OUTPUT "${OUTPUT}" CONTENT "${content}" @ONLY)
