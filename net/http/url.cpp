// Compiles Boost.URL in header-only mode (Debian ships no libboost_url).
#include <boost/url/src.hpp>
