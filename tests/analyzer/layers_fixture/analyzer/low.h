// Points up: the check must say so.
#pragma once

#include "high.h"
