; std::string_view arguments and return values chosen with /s: the pass finds the view's pointer
; and length among the IR's values from the debug information (the source's parameters and the
; view's two members), and calls __shapetrace_value_view(id, descriptor, address, length) with
; descriptor = position | 4 << 8 (SHAPETRACE_VALUE_STRING). A view counts as one position however
; the ABI passed it: two arguments (x86-64, in registers), one [2 x i64] (AArch64), one byval
; pointer (x86-64 once the registers have run out); returned as { i64, ptr } (x86-64) or
; [2 x i64] (AArch64). The members are found by their types, in either order (libstdc++ puts the
; length first, libc++ the pointer).
; RUN: split-file %s %t
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='lookup@arg1/s,arg2,arg3/s,late@arg2/s,arg3,first@arg1/s,prefix@retval/s' -S %t/x86.ll | FileCheck %s --check-prefix=X86
; Passed in memory: the gate (a byval argument cannot be forwarded by a musttail call), and the
; members loaded from the copy at their offsets, behind the entry's test.
; X86-LABEL: define i64 @late(i64 %a, ptr byval(%"class.std::basic_string_view") align 8 %s, i32 %n)
; X86:       shapetrace.hook{{[0-9]*}}:
; X86:         %[[AT:.*]] = getelementptr inbounds i8, ptr %s, i64 8
; X86-NEXT:    %shapetrace.view.data = load i64, ptr %[[AT]]
; X86-NEXT:    %shapetrace.view.length = load i64, ptr %s
; X86-NEXT:    call void @__shapetrace_value_view(i32 %{{.*}}, i32 1026, i64 %shapetrace.view.data, i64 %shapetrace.view.length)
; X86:         %shapetrace.value = sext i32 %n to i64
; X86-NEXT:    call void @__shapetrace_value(i32 %{{.*}}, i32 3, i64 %shapetrace.value)
; X86-LABEL: define internal i32 @lookup.traced(i64 %key.len, ptr %key.ptr, i32 %flags, i64 %where.len, ptr %where.ptr)
; X86:         %shapetrace.view.data = ptrtoint ptr %key.ptr to i64
; X86-NEXT:    call void @__shapetrace_value_view(i32 %{{.*}}, i32 1025, i64 %shapetrace.view.data, i64 %key.len)
; X86:         %shapetrace.value = sext i32 %flags to i64
; X86-NEXT:    call void @__shapetrace_value(i32 %{{.*}}, i32 2, i64 %shapetrace.value)
; X86:         %shapetrace.view.data{{[0-9]+}} = ptrtoint ptr %where.ptr to i64
; X86-NEXT:    call void @__shapetrace_value_view(i32 %{{.*}}, i32 1027, i64 %shapetrace.view.data{{[0-9]+}}, i64 %where.len)
; libc++'s layout: the pointer first.
; X86-LABEL: define internal i64 @first.traced(ptr %v.ptr, i64 %v.len)
; X86:         %shapetrace.view.data = ptrtoint ptr %v.ptr to i64
; X86-NEXT:    call void @__shapetrace_value_view(i32 %{{.*}}, i32 1025, i64 %shapetrace.view.data, i64 %v.len)
; X86-LABEL: define internal { i64, ptr } @prefix.traced(i64 %t.len, ptr %t.ptr, i64 %n)
; X86:         %shapetrace.view.data = extractvalue { i64, ptr } %r, 1
; X86-NEXT:    %[[DATA:.*]] = ptrtoint ptr %shapetrace.view.data to i64
; X86-NEXT:    %shapetrace.view.length = extractvalue { i64, ptr } %r, 0
; X86-NEXT:    call void @__shapetrace_value_view(i32 %{{.*}}, i32 1024, i64 %[[DATA]], i64 %shapetrace.view.length)
; X86:         call void @__shapetrace_exit(
; X86-NEXT:    ret { i64, ptr } %r
; Only views chosen in `first`: the other hook is not declared when nothing calls it.
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='first@arg1/s' -S %t/x86.ll | FileCheck %s --check-prefix=ONLYVIEW
; ONLYVIEW-NOT: declare void @__shapetrace_value(
; ONLYVIEW: declare void @__shapetrace_value_view(i32, i32, i64, i64)
; ONLYVIEW-NOT: declare void @__shapetrace_value(

; AArch64: one [2 x i64] argument and return value, its elements by the members' offsets.
; RUN: %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='lookup@arg1/s,arg2,arg3/s,prefix@retval/s' -S %t/a64.ll | FileCheck %s --check-prefix=A64
; A64-LABEL: define internal i32 @lookup.traced([2 x i64] %key, i32 %flags, [2 x i64] %where)
; A64:         %shapetrace.view.data = extractvalue [2 x i64] %key, 1
; A64-NEXT:    %shapetrace.view.length = extractvalue [2 x i64] %key, 0
; A64-NEXT:    call void @__shapetrace_value_view(i32 %{{.*}}, i32 1025, i64 %shapetrace.view.data, i64 %shapetrace.view.length)
; A64:         call void @__shapetrace_value(i32 %{{.*}}, i32 2, i64 %shapetrace.value)
; A64:         %shapetrace.view.data{{[0-9]+}} = extractvalue [2 x i64] %where, 1
; A64-NEXT:    %shapetrace.view.length{{[0-9]+}} = extractvalue [2 x i64] %where, 0
; A64-NEXT:    call void @__shapetrace_value_view(i32 %{{.*}}, i32 1027,
; A64-LABEL: define internal [2 x i64] @prefix.traced([2 x i64] %t, i64 %n)
; A64:         %shapetrace.view.data = extractvalue [2 x i64] %r, 1
; A64-NEXT:    %shapetrace.view.length = extractvalue [2 x i64] %r, 0
; A64-NEXT:    call void @__shapetrace_value_view(i32 %{{.*}}, i32 1024, i64 %shapetrace.view.data, i64 %shapetrace.view.length)

; Refused, naming the function and the value: a std::wstring_view (not 8-bit characters), a
; std::string by value, a view without /s (as an argument and as the return value), a view whose
; debug information lists no members (a declaration), and a view followed by fewer IR arguments
; than it needs (the optimiser removed one: the positions cannot be trusted).
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='wide@arg1/s' -disable-output %t/x86.ll 2>&1 | FileCheck %s --check-prefix=WIDE
; WIDE: error: shapetrace: arg1 of 'wide' is a std::basic_string_view<wchar_t, std::char_traits<wchar_t> > (characters of 32 bits): /s records 8-bit characters only (const char*, std::string_view)
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='owned@arg1/s' -disable-output %t/x86.ll 2>&1 | FileCheck %s --check-prefix=OWNED
; OWNED: error: shapetrace: arg1 of 'owned' is a std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > by value (the ABI passes a hidden reference to a copy): /s records a const char* or a std::string_view; choose a function that receives .c_str() or a std::string_view
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='lookup@arg3' -disable-output %t/x86.ll 2>&1 | FileCheck %s --check-prefix=NOTEXT
; NOTEXT: error: shapetrace: arg3 of 'lookup' is a std::basic_string_view<char, std::char_traits<char> > by value: record its characters with /s (arg3/s)
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='prefix@retval' -disable-output %t/x86.ll 2>&1 | FileCheck %s --check-prefix=NOTEXT-RET
; NOTEXT-RET: error: shapetrace: the return value of 'prefix' is a std::basic_string_view<char, std::char_traits<char> > by value: record its characters with /s (retval/s)
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='declared@retval/s' -disable-output %t/x86.ll 2>&1 | FileCheck %s --check-prefix=DECLARED
; DECLARED: error: shapetrace: the return value of 'declared' is a std::basic_string_view<char, std::char_traits<char> > whose debug information does not list its pointer and its length (a declaration only, or a layout this pass does not know): /s cannot find its characters
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='shortened@arg2' -disable-output %t/x86.ll 2>&1 | FileCheck %s --check-prefix=SHORT
; SHORT: error: shapetrace: 'shortened' has 2 parameters in the source and 2 arguments in the IR, which do not correspond (a struct by value split over several registers or packed with another, or arguments the optimiser removed from this internal function): argument positions would not be the source's, so none can be recorded; SHAPETRACE_PASS_MODE=before-inlining records functions as the source declares them
; Without debug information the views cannot be found: /s on a function whose demangled
; parameters hold one is refused (without /s its IR arguments are recorded as they are).
; RUN: not %opt_shapetrace -passes=shapetrace-instrument -shapetrace-args='lookup@arg3/s' -disable-output %t/nodebug.ll 2>&1 | FileCheck %s --check-prefix=NODEBUG
; NODEBUG: error: shapetrace: 'lookup(std::basic_string_view<char, std::char_traits<char>>, int, std::basic_string_view<char, std::char_traits<char>>)' takes a std::string_view, which the ABI may split over two arguments: without debug information (-g; line tables only do not describe parameters) the pass cannot tell which IR argument /s would read

;--- x86.ll
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

%"class.std::basic_string_view" = type { i64, ptr }

; int lookup(std::string_view key, int flags, std::string_view where);
define i32 @lookup(i64 %key.len, ptr %key.ptr, i32 %flags, i64 %where.len, ptr %where.ptr) !dbg !30 {
  ret i32 %flags
}
; long late(long a, std::string_view s, int n);  (s in memory, as after five integer arguments)
define i64 @late(i64 %a, ptr byval(%"class.std::basic_string_view") align 8 %s, i32 %n) !dbg !32 {
  ret i64 %a
}
; size_t first(libcxx_view v);  (the pointer first)
define i64 @first(ptr %v.ptr, i64 %v.len) !dbg !34 {
  ret i64 %v.len
}
; std::string_view prefix(std::string_view t, size_t n);
define { i64, ptr } @prefix(i64 %t.len, ptr %t.ptr, i64 %n) !dbg !36 {
  %a = insertvalue { i64, ptr } undef, i64 %n, 0
  %r = insertvalue { i64, ptr } %a, ptr %t.ptr, 1
  ret { i64, ptr } %r
}
; size_t wide(std::wstring_view w);
define i64 @wide(i64 %w.len, ptr %w.ptr) !dbg !38 {
  ret i64 %w.len
}
; size_t owned(std::string s);  (a hidden reference to a copy)
define i64 @owned(ptr %s) !dbg !40 {
  ret i64 0
}
; std::string_view declared();  (its class only declared in the debug information)
define { i64, ptr } @declared() !dbg !42 {
  ret { i64, ptr } zeroinitializer
}
; static int shortened(std::string_view s, int n);  (the optimiser removed the view's length)
define internal i32 @shortened(ptr %s.ptr, i32 %n) !dbg !44 {
  ret i32 %n
}

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!2, !3}
!0 = distinct !DICompileUnit(language: DW_LANG_C_plus_plus_14, file: !1, producer: "clang", isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug)
!1 = !DIFile(filename: "views.cpp", directory: "/src")
!2 = !{i32 7, !"Dwarf Version", i32 5}
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = !DINamespace(name: "std", scope: null)
!5 = !DIBasicType(name: "unsigned long", size: 64, encoding: DW_ATE_unsigned)
!6 = !DIBasicType(name: "char", size: 8, encoding: DW_ATE_signed_char)
!7 = !DIDerivedType(tag: DW_TAG_const_type, baseType: !6)
!8 = !DIDerivedType(tag: DW_TAG_pointer_type, baseType: !7, size: 64)
!9 = !DIBasicType(name: "int", size: 32, encoding: DW_ATE_signed)
!10 = !DIBasicType(name: "long", size: 64, encoding: DW_ATE_signed)
; libstdc++'s std::string_view: _M_len, then _M_str; npos, a static member, is not a member of
; the object.
!11 = distinct !DICompositeType(tag: DW_TAG_class_type, name: "basic_string_view<char, std::char_traits<char> >", scope: !4, file: !1, size: 128, flags: DIFlagTypePassByValue | DIFlagNonTrivial, elements: !12, identifier: "_ZTSSt17basic_string_viewIcSt11char_traitsIcEE")
!12 = !{!13, !14, !15}
!13 = !DIDerivedType(tag: DW_TAG_variable, name: "npos", scope: !11, file: !1, baseType: !5, flags: DIFlagPublic | DIFlagStaticMember)
!14 = !DIDerivedType(tag: DW_TAG_member, name: "_M_len", scope: !11, file: !1, baseType: !5, size: 64)
!15 = !DIDerivedType(tag: DW_TAG_member, name: "_M_str", scope: !11, file: !1, baseType: !8, size: 64, offset: 64)
!16 = !DIDerivedType(tag: DW_TAG_typedef, name: "string_view", scope: !4, file: !1, baseType: !11)
; libc++'s, in std::__1: __data_, then __size_.
!17 = !DINamespace(name: "__1", scope: !4, exportSymbols: true)
!18 = distinct !DICompositeType(tag: DW_TAG_class_type, name: "basic_string_view<char, std::__1::char_traits<char> >", scope: !17, file: !1, size: 128, flags: DIFlagTypePassByValue, elements: !{!19, !20})
!19 = !DIDerivedType(tag: DW_TAG_member, name: "__data_", scope: !18, file: !1, baseType: !8, size: 64)
!20 = !DIDerivedType(tag: DW_TAG_member, name: "__size_", scope: !18, file: !1, baseType: !5, size: 64, offset: 64)
; std::wstring_view.
!21 = !DIBasicType(name: "wchar_t", size: 32, encoding: DW_ATE_signed)
!22 = !DIDerivedType(tag: DW_TAG_pointer_type, baseType: !21, size: 64)
!23 = distinct !DICompositeType(tag: DW_TAG_class_type, name: "basic_string_view<wchar_t, std::char_traits<wchar_t> >", scope: !4, file: !1, size: 128, flags: DIFlagTypePassByValue, elements: !{!24, !25})
!24 = !DIDerivedType(tag: DW_TAG_member, name: "_M_len", scope: !23, file: !1, baseType: !5, size: 64)
!25 = !DIDerivedType(tag: DW_TAG_member, name: "_M_str", scope: !23, file: !1, baseType: !22, size: 64, offset: 64)
; std::string (std::__cxx11::basic_string), passed by reference.
!26 = !DINamespace(name: "__cxx11", scope: !4, exportSymbols: true)
!27 = distinct !DICompositeType(tag: DW_TAG_class_type, name: "basic_string<char, std::char_traits<char>, std::allocator<char> >", scope: !26, file: !1, size: 256, flags: DIFlagTypePassByReference | DIFlagNonTrivial, elements: !{})
; A declaration only.
!28 = !DICompositeType(tag: DW_TAG_class_type, name: "basic_string_view<char, std::char_traits<char> >", scope: !4, file: !1, flags: DIFlagFwdDecl)
!30 = distinct !DISubprogram(name: "lookup", scope: !1, file: !1, line: 1, type: !31, scopeLine: 1, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
!31 = !DISubroutineType(types: !{!9, !16, !9, !16})
!32 = distinct !DISubprogram(name: "late", scope: !1, file: !1, line: 2, type: !33, scopeLine: 2, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
!33 = !DISubroutineType(types: !{!10, !10, !11, !9})
!34 = distinct !DISubprogram(name: "first", scope: !1, file: !1, line: 3, type: !35, scopeLine: 3, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
!35 = !DISubroutineType(types: !{!5, !18})
!36 = distinct !DISubprogram(name: "prefix", scope: !1, file: !1, line: 4, type: !37, scopeLine: 4, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
!37 = !DISubroutineType(types: !{!16, !16, !5})
!38 = distinct !DISubprogram(name: "wide", scope: !1, file: !1, line: 5, type: !39, scopeLine: 5, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
!39 = !DISubroutineType(types: !{!5, !23})
!40 = distinct !DISubprogram(name: "owned", scope: !1, file: !1, line: 6, type: !41, scopeLine: 6, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
!41 = !DISubroutineType(types: !{!5, !27})
!42 = distinct !DISubprogram(name: "declared", scope: !1, file: !1, line: 7, type: !43, scopeLine: 7, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
!43 = !DISubroutineType(types: !{!28})
!44 = distinct !DISubprogram(name: "shortened", scope: !1, file: !1, line: 8, type: !45, scopeLine: 8, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
!45 = !DISubroutineType(types: !{!9, !11, !9})

;--- a64.ll
target triple = "aarch64-unknown-linux-gnu"

; int lookup(std::string_view key, int flags, std::string_view where);
define i32 @lookup([2 x i64] %key, i32 %flags, [2 x i64] %where) !dbg !30 {
  ret i32 %flags
}
; std::string_view prefix(std::string_view t, size_t n);
define [2 x i64] @prefix([2 x i64] %t, i64 %n) !dbg !36 {
  %r = insertvalue [2 x i64] %t, i64 %n, 0
  ret [2 x i64] %r
}

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!2, !3}
!0 = distinct !DICompileUnit(language: DW_LANG_C_plus_plus_14, file: !1, producer: "clang", isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug)
!1 = !DIFile(filename: "views.cpp", directory: "/src")
!2 = !{i32 7, !"Dwarf Version", i32 5}
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = !DINamespace(name: "std", scope: null)
!5 = !DIBasicType(name: "unsigned long", size: 64, encoding: DW_ATE_unsigned)
!6 = !DIBasicType(name: "char", size: 8, encoding: DW_ATE_unsigned_char)
!7 = !DIDerivedType(tag: DW_TAG_const_type, baseType: !6)
!8 = !DIDerivedType(tag: DW_TAG_pointer_type, baseType: !7, size: 64)
!9 = !DIBasicType(name: "int", size: 32, encoding: DW_ATE_signed)
!11 = distinct !DICompositeType(tag: DW_TAG_class_type, name: "basic_string_view<char, std::char_traits<char> >", scope: !4, file: !1, size: 128, flags: DIFlagTypePassByValue | DIFlagNonTrivial, elements: !{!14, !15}, identifier: "_ZTSSt17basic_string_viewIcSt11char_traitsIcEE")
!14 = !DIDerivedType(tag: DW_TAG_member, name: "_M_len", scope: !11, file: !1, baseType: !5, size: 64)
!15 = !DIDerivedType(tag: DW_TAG_member, name: "_M_str", scope: !11, file: !1, baseType: !8, size: 64, offset: 64)
!16 = !DIDerivedType(tag: DW_TAG_typedef, name: "string_view", scope: !4, file: !1, baseType: !11)
!30 = distinct !DISubprogram(name: "lookup", scope: !1, file: !1, line: 1, type: !31, scopeLine: 1, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
!31 = !DISubroutineType(types: !{!9, !16, !9, !16})
!36 = distinct !DISubprogram(name: "prefix", scope: !1, file: !1, line: 4, type: !37, scopeLine: 4, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
!37 = !DISubroutineType(types: !{!16, !16, !5})

;--- nodebug.ll
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

; int lookup(std::string_view key, int flags, std::string_view where);
define i32 @_Z6lookupSt17basic_string_viewIcSt11char_traitsIcEEiS2_(i64 %key.len, ptr %key.ptr, i32 %flags, i64 %where.len, ptr %where.ptr) {
  ret i32 %flags
}
