# Precompiled headers for the heavy third-party headers (issue 25: the test
# command spent most of its time compiling Boost.Asio/Beast, CAF, nlohmann/json,
# spdlog and Catch2 again in every source file).
#
# Four header sets, each compiled once by a small owner target and reused by
# every target of its kind (target_precompile_headers REUSE_FROM): a PCH can be
# reused only by targets compiled with the same flags, and all of Herald's are
# (the build type's and the sanitizer/fuzz flags are set for the whole tree).
#
#   wire   the C++ standard library and nlohmann/json       net/wire, net/obs, net/auth
#   net    wire + Boost.Asio/Beast (net/asio.hpp's set)      the rest of net/, loadtest/
#   actors net + CAF + spdlog                                actors/, app/, their tests
#   test   net + Catch2                                     the Catch2 suites without CAF
#
# Catch2's main() (tests/catch_main.cpp, which defines CATCH_CONFIG_MAIN before
# the header) is compiled once, without a PCH, into herald_catch_main.
#
# -DHERALD_PCH=OFF builds without them: the sources include what they use, and a
# build without PCH is how that stays checked (tests/layout checks includes, not
# this).
option(HERALD_PCH "Precompile the third-party headers (faster builds)" ON)

set(_herald_pch_std
    <algorithm> <array> <atomic> <chrono> <cstddef> <cstdint> <cstring> <deque> <functional>
    <map> <memory> <mutex> <optional> <set> <sstream> <string> <string_view> <thread>
    <unordered_map> <utility> <variant> <vector>)
set(_herald_pch_json <nlohmann/json.hpp>)
set(_herald_pch_asio <boost/asio.hpp> <boost/beast/core.hpp> <boost/beast/http.hpp>
                     <boost/beast/websocket/rfc6455.hpp>)
set(_herald_pch_caf <caf/all.hpp> <spdlog/spdlog.h>)
set(_herald_pch_catch <catch2/catch.hpp>)

# herald_pch_owner(NAME HEADERS... LINK libs...): the target that compiles one set.
function(_herald_pch_owner name)
  cmake_parse_arguments(arg "" "" "HEADERS;LINK" ${ARGN})
  set(src ${PROJECT_BINARY_DIR}/generated/pch/${name}.cpp)
  file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/generated/pch)
  file(WRITE ${src}.in "// Owner of the ${name} precompiled header (cmake/HeraldPch.cmake).\n")
  configure_file(${src}.in ${src} COPYONLY)
  add_library(herald_pch_${name} OBJECT ${src})
  target_link_libraries(herald_pch_${name} PRIVATE ${arg_LINK})
  target_precompile_headers(herald_pch_${name} PRIVATE ${arg_HEADERS})
endfunction()

# Called once from the top level, after find_package of the libraries (Catch2
# too when the tests are built).
function(herald_pch_owners)
  if(NOT HERALD_PCH)
    return()
  endif()
  _herald_pch_owner(wire HEADERS ${_herald_pch_std} ${_herald_pch_json}
                    LINK nlohmann_json::nlohmann_json)
  _herald_pch_owner(net HEADERS ${_herald_pch_std} ${_herald_pch_json} ${_herald_pch_asio}
                    LINK nlohmann_json::nlohmann_json Boost::headers Threads::Threads)
  if(NOT HERALD_BUILD_FUZZ)
    _herald_pch_owner(actors HEADERS ${_herald_pch_std} ${_herald_pch_json} ${_herald_pch_asio}
                      ${_herald_pch_caf}
                      LINK nlohmann_json::nlohmann_json Boost::headers Threads::Threads CAF::core
                           spdlog::spdlog)
    if(HERALD_BUILD_TESTS)
      _herald_pch_owner(test HEADERS ${_herald_pch_std} ${_herald_pch_json} ${_herald_pch_asio}
                        ${_herald_pch_catch}
                        LINK nlohmann_json::nlohmann_json Boost::headers Threads::Threads
                             Catch2::Catch2)
    endif()
  endif()
endfunction()

# herald_pch(TARGET SET): TARGET's sources start with SET's precompiled header.
function(herald_pch target set)
  if(HERALD_PCH)
    target_precompile_headers(${target} REUSE_FROM herald_pch_${set})
  endif()
endfunction()
