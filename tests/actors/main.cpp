// The one translation unit that defines main() for the CAF test suites.
#include <caf/test/unit_test_impl.hpp>
