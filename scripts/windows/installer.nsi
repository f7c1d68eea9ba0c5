; SD Bench's Windows installer (NSIS 3, Unicode). scripts/bundle-windows builds it with makensis and
; passes the values below from tauri.conf.json, so the product name, version, identifier and icon
; have one source:
;   PRODUCT_NAME  VERSION  VERSION_QUAD (a.b.c.0)  IDENTIFIER  PUBLISHER  DESCRIPTION
;   ICON (an .ico)  STAGE (the folder of files to install)  OUTFILE
;
; Per user, no administrator rights: the program goes to %LOCALAPPDATA%\Programs\<product>, its
; uninstall entry and install folder to HKCU. Installing over an older version replaces the program
; files in the same folder; the user's results and settings live elsewhere (%APPDATA%\sdbench) and
; are kept. Uninstalling keeps them too, unless the person ticks the box (or passes /PURGE with /S).
;
; Command line: /S silent; /D=<folder> install folder (last, unquoted); /NODESKTOPSHORTCUT.

; A 64-bit installer for a 64-bit program (Unicode).
Target amd64-unicode
ManifestDPIAware true
RequestExecutionLevel user
SetCompressor /SOLID lzma

!include "MUI2.nsh"
!include "FileFunc.nsh"
!include "LogicLib.nsh"
!include "nsDialogs.nsh"

!define APP_EXE "${PRODUCT_NAME}.exe"
!define CLI_EXE "sdbench.exe"
!define UNINSTALL_KEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\${IDENTIFIER}"
!define SETTINGS_KEY "Software\${IDENTIFIER}"
; The WebView2 runtime's client id, under which Edge's updater records the installed version.
!define WEBVIEW2_CLIENT "{F3017226-FE2A-4295-8BDF-00C3A9A7E4C5}"
!define WEBVIEW2_DOWNLOAD "https://developer.microsoft.com/microsoft-edge/webview2/"

Name "${PRODUCT_NAME}"
OutFile "${OUTFILE}"
InstallDir "$LOCALAPPDATA\Programs\${PRODUCT_NAME}"
; An upgrade installs where the previous version is.
InstallDirRegKey HKCU "${SETTINGS_KEY}" "InstallDir"
BrandingText "${PRODUCT_NAME} ${VERSION}"

VIProductVersion "${VERSION_QUAD}"
VIAddVersionKey "ProductName" "${PRODUCT_NAME}"
VIAddVersionKey "ProductVersion" "${VERSION}"
VIAddVersionKey "FileVersion" "${VERSION}"
VIAddVersionKey "FileDescription" "${PRODUCT_NAME} installer"
VIAddVersionKey "CompanyName" "${PUBLISHER}"
VIAddVersionKey "LegalCopyright" "${PUBLISHER}"

!define MUI_ICON "${ICON}"
!define MUI_UNICON "${ICON}"
!define MUI_ABORTWARNING
!define MUI_FINISHPAGE_RUN "$INSTDIR\${APP_EXE}"
!define MUI_FINISHPAGE_RUN_TEXT "Start ${PRODUCT_NAME}"

!insertmacro MUI_PAGE_WELCOME
!insertmacro MUI_PAGE_COMPONENTS
!insertmacro MUI_PAGE_DIRECTORY
!insertmacro MUI_PAGE_INSTFILES
!insertmacro MUI_PAGE_FINISH

!insertmacro MUI_UNPAGE_CONFIRM
UninstPage custom un.DataPage un.DataPageLeave
!insertmacro MUI_UNPAGE_INSTFILES

!insertmacro MUI_LANGUAGE "English"

Var PurgeData
Var PurgeCheckbox

Section "${PRODUCT_NAME}" SecProgram
  SectionIn RO
  SetShellVarContext current
  SetOutPath "$INSTDIR"
  ; Every file of the stage folder: the app, the command-line tool and what they load.
  File /r "${STAGE}\*.*"
  WriteUninstaller "$INSTDIR\uninstall.exe"

  CreateShortCut "$SMPROGRAMS\${PRODUCT_NAME}.lnk" "$INSTDIR\${APP_EXE}" "" "$INSTDIR\${APP_EXE}" 0
  ; The command-line tool: a console in the install folder.
  CreateShortCut "$SMPROGRAMS\${PRODUCT_NAME} command line.lnk" "$SYSDIR\cmd.exe" \
    '/k "cd /d "$INSTDIR" && ${CLI_EXE} --help"' "$INSTDIR\${APP_EXE}" 0

  WriteRegStr HKCU "${SETTINGS_KEY}" "InstallDir" "$INSTDIR"
  WriteRegStr HKCU "${SETTINGS_KEY}" "Version" "${VERSION}"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "DisplayName" "${PRODUCT_NAME}"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "DisplayVersion" "${VERSION}"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "Publisher" "${PUBLISHER}"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "Comments" "${DESCRIPTION}"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "DisplayIcon" "$INSTDIR\${APP_EXE}"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "InstallLocation" "$INSTDIR"
  WriteRegStr HKCU "${UNINSTALL_KEY}" "UninstallString" '"$INSTDIR\uninstall.exe"'
  WriteRegStr HKCU "${UNINSTALL_KEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" /S'
  WriteRegDWORD HKCU "${UNINSTALL_KEY}" "NoModify" 1
  WriteRegDWORD HKCU "${UNINSTALL_KEY}" "NoRepair" 1
  ${GetSize} "$INSTDIR" "/S=0K" $0 $1 $2
  WriteRegDWORD HKCU "${UNINSTALL_KEY}" "EstimatedSize" $0

  Call CheckWebView2
SectionEnd

Section "Desktop shortcut" SecDesktop
  SetShellVarContext current
  CreateShortCut "$DESKTOP\${PRODUCT_NAME}.lnk" "$INSTDIR\${APP_EXE}" "" "$INSTDIR\${APP_EXE}" 0
SectionEnd

!insertmacro MUI_FUNCTION_DESCRIPTION_BEGIN
  !insertmacro MUI_DESCRIPTION_TEXT ${SecProgram} "The desktop app and the sdbench command-line tool."
  !insertmacro MUI_DESCRIPTION_TEXT ${SecDesktop} "A shortcut to ${PRODUCT_NAME} on the desktop."
!insertmacro MUI_FUNCTION_DESCRIPTION_END

Function .onInit
  ${GetParameters} $0
  ClearErrors
  ${GetOptions} $0 "/NODESKTOPSHORTCUT" $1
  ${IfNot} ${Errors}
    SectionSetFlags ${SecDesktop} 0
  ${EndIf}
FunctionEnd

; The app draws its window with Microsoft Edge WebView2, part of Windows 10 (recent updates) and 11.
; Where it is missing the installer says so (the command-line tool works without it).
Function CheckWebView2
  ReadRegStr $0 HKLM "SOFTWARE\WOW6432Node\Microsoft\EdgeUpdate\Clients\${WEBVIEW2_CLIENT}" "pv"
  ${If} $0 == ""
  ${OrIf} $0 == "0.0.0.0"
    ReadRegStr $0 HKCU "Software\Microsoft\EdgeUpdate\Clients\${WEBVIEW2_CLIENT}" "pv"
  ${EndIf}
  ${If} $0 == ""
  ${OrIf} $0 == "0.0.0.0"
    DetailPrint "Microsoft Edge WebView2 Runtime not found: the app needs it (${WEBVIEW2_DOWNLOAD})."
    MessageBox MB_YESNO|MB_ICONEXCLAMATION \
      "${PRODUCT_NAME} needs the Microsoft Edge WebView2 Runtime, which this computer does not have.$\r$\n$\r$\nOpen Microsoft's download page now?" \
      /SD IDNO IDNO done
    ExecShell "open" "${WEBVIEW2_DOWNLOAD}"
  ${Else}
    DetailPrint "Microsoft Edge WebView2 Runtime $0 found."
  ${EndIf}
  done:
FunctionEnd

Function un.DataPage
  !insertmacro MUI_HEADER_TEXT "Your results" "Choose whether to keep your benchmark history and settings."
  nsDialogs::Create 1018
  Pop $0
  ${NSD_CreateLabel} 0 0 100% 36u "Your benchmark history, settings and unsent results are in $APPDATA\sdbench. They are kept unless you tick the box. (Downloaded models stay in the Hugging Face cache.)"
  Pop $0
  ${NSD_CreateCheckbox} 0 44u 100% 12u "Also delete my history and settings"
  Pop $PurgeCheckbox
  nsDialogs::Show
FunctionEnd

Function un.DataPageLeave
  ${NSD_GetState} $PurgeCheckbox $PurgeData
FunctionEnd

Function un.onInit
  StrCpy $PurgeData ${BST_UNCHECKED}
  ${GetParameters} $0
  ClearErrors
  ${GetOptions} $0 "/PURGE" $1
  ${IfNot} ${Errors}
    StrCpy $PurgeData ${BST_CHECKED}
  ${EndIf}
FunctionEnd

Section "Uninstall"
  SetShellVarContext current
  Delete "$SMPROGRAMS\${PRODUCT_NAME}.lnk"
  Delete "$SMPROGRAMS\${PRODUCT_NAME} command line.lnk"
  Delete "$DESKTOP\${PRODUCT_NAME}.lnk"
  ; Only the files this installer puts there (the list is generated from the stage folder).
  !include "${STAGE_LIST}"
  Delete "$INSTDIR\uninstall.exe"
  RMDir "$INSTDIR"
  DeleteRegKey HKCU "${UNINSTALL_KEY}"
  DeleteRegKey HKCU "${SETTINGS_KEY}"
  ${If} $PurgeData == ${BST_CHECKED}
    RMDir /r "$APPDATA\sdbench"
  ${EndIf}
SectionEnd
