#pragma once
// EXPECT_DRIFT_ERROR(statement, needle): the statement throws a DriftError whose message contains
// `needle` (the engine's errors name what is wrong; the tests check that they do).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"

#define EXPECT_DRIFT_ERROR(statement, needle) \
  EXPECT_THAT([&] { statement; }, ::testing::ThrowsMessage<::drift::DriftError>(::testing::HasSubstr(needle)))
