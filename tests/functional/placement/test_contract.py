"""The contract suite (rtframework.placement.contract_tests) on the backend
the environment selects: sql on RTF_TEST_DB's engine, or a real Placement
with RTF_TEST_BACKEND=http (conftest.py's ``backend``)."""

from rtframework.placement.contract_tests.test_allocations import *  # noqa: F403
from rtframework.placement.contract_tests.test_candidates import *  # noqa: F403
from rtframework.placement.contract_tests.test_empty_consumers import *  # noqa: F403
from rtframework.placement.contract_tests.test_forbidden_aggregates import *  # noqa: F403
from rtframework.placement.contract_tests.test_inventories import *  # noqa: F403
from rtframework.placement.contract_tests.test_placement_answers import *  # noqa: F403
from rtframework.placement.contract_tests.test_providers import *  # noqa: F403
from rtframework.placement.contract_tests.test_request_groups import *  # noqa: F403
from rtframework.placement.contract_tests.test_requests import *  # noqa: F403
from rtframework.placement.contract_tests.test_traits_classes import *  # noqa: F403
from rtframework.placement.contract_tests.test_usages import *  # noqa: F403
