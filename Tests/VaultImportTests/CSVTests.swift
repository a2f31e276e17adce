import Foundation
import Testing
import VaultCore
@testable import VaultImport

/// The RFC 4180 reader and the CSV layouts `vault import csv` recognises (headers written from each program's
/// documentation and real exports: KeePassXC's is what keepassxc-cli 2.7.4 writes).
@Suite struct CSVTests {
    func records(_ text: String) throws -> [[String]] {
        var reader = CSVReader(bytes(text))
        var out: [[String]] = []
        while let record = try reader.next() { out.append(record.fields) }
        return out
    }

    @Test func quotesEmbeddedNewlinesCRLFAndTheBOM() throws {
        let text = "\u{FEFF}a,b,c\r\n\"x,1\",\"say \"\"hi\"\"\",\"two\r\nlines\"\r\n\r\nplain,,\"\"\n"
        #expect(try records(text) == [["a", "b", "c"], ["x,1", "say \"hi\"", "two\r\nlines"], ["plain", "", ""]])
        // Lines are counted inside quoted fields: the record after a two-line field starts on line 4.
        var reader = CSVReader(bytes("h\n\"1\n2\"\nnext\n"))
        _ = try reader.next()
        #expect(try reader.next()?.line == 2)
        #expect(try reader.next()?.line == 4)
        #expect(try records("a,b") == [["a", "b"]])  // no final newline
        #expect(try records("a\rb\r") == [["a"], ["b"]])  // old Mac line ends
    }

    @Test func anUnterminatedQuoteOrTextAfterAQuoteNamesTheLine() {
        #expect(importError { _ = try records("a,b\n1,\"open\n\n") } == .malformed(location: "line 2", reason: "field 2 opens a quote that never closes"))
        #expect(importError { _ = try records("a\n\"x\"y\n") }
                == .malformed(location: "line 2", reason: "text after the closing quote of field 1 (a quote inside a quoted field is written \"\")"))
        var reader = CSVReader([0x61, 0x0A, 0xFF, 0xFE, 0x0A])
        _ = try? reader.next()
        #expect(importError { _ = try reader.next() } == .malformed(location: "line 2", reason: "field 1 is not UTF-8 text"))
    }

    @Test func chromeWithAndWithoutNote() throws {
        let parsed = try CSVImport.read(bytes("name,url,username,password,note\ngithub.com,https://github.com/login,alice,\"p,w\",\"multi\nline\"\n"))
        let entry = try #require(parsed.entries.first)
        #expect(entry.path == ["github.com"] && entry.origin == "line 2 ('github.com')")
        #expect(entry.current.names == ["password", "username", "url", "notes"])
        #expect(entry.current.text("password") == "p,w" && entry.current.field("password")!.isSecret)
        #expect(entry.current.text("notes") == "multi\nline")
        let old = try CSVImport.read(bytes("name,url,username,password\n,https://x.example/a,bob,pw\n"))
        #expect(old.entries[0].path == ["x.example"])  // no name: the URL's host
    }

    @Test func firefoxKeepsItsTimes() throws {
        let header = "url,username,password,httpRealm,formActionOrigin,guid,timeCreated,timeLastUsed,timePasswordChanged\n"
        let parsed = try CSVImport.read(bytes(header + "https://accounts.example,alice,pw,,https://accounts.example,{abc},1600000000000,1700000000000,1650000000000\n"))
        let entry = try #require(parsed.entries.first)
        #expect(entry.path == ["accounts.example"])
        #expect(entry.created == 1_600_000_000_000 && entry.current.modified == 1_650_000_000_000)
        #expect(entry.current.text("form action origin") == "https://accounts.example")
        #expect(entry.current.field("http realm") == nil)
    }

    @Test func bitwardenFoldersFieldsAndTOTP() throws {
        let header = "folder,favorite,type,name,notes,fields,reprompt,login_uri,login_username,login_password,login_totp\n"
        let text = header
            + "Work/Dev,1,login,GitHub,my notes,\"pin: 1234\nrecovery: abc def\",0,\"https://github.com,https://gh.io\",alice,pw,JBSWY3DPEHPK3PXP\n"
            + ",,note,Wifi,the key is on the fridge,,0,,,,\n"
            + ",,card,Visa,,,0,,,,\n"
        let parsed = try CSVImport.read(bytes(text))
        #expect(parsed.entries.count == 2)
        let github = parsed.entries[0]
        #expect(github.path == ["Work", "Dev", "GitHub"])
        #expect(github.current.names == ["password", "username", "url", "url (2)", "otp", "notes", "pin", "recovery"])
        #expect(github.current.text("recovery") == "abc def" && github.current.text("url (2)") == "https://gh.io")
        #expect(parsed.entries[1].current.names == ["notes"])
        #expect(parsed.skipped == [SkippedItem(item: "line 5 ('Visa')", reason: "a Bitwarden item of type 'card' (CSV carries logins and notes)")])
        // The older header without reprompt.
        let old = try CSVImport.read(bytes("folder,favorite,type,name,notes,fields,login_uri,login_username,login_password,login_totp\n,,login,x,,,,u,p,\n"))
        #expect(old.entries[0].current.text("username") == "u")
    }

    @Test func onePasswordSkipsArchivedItems() throws {
        let text = "Title,Url,Username,Password,OTPAuth,Favorite,Archived,Tags,Notes\n"
            + "GitLab,https://gitlab.com,alice,pw,otpauth://totp/GitLab:alice?secret=JBSWY3DPEHPK3PXP,false,false,\"dev,work\",hi\n"
            + "Old,https://old.example,bob,pw2,,false,true,,\n"
        let parsed = try CSVImport.read(bytes(text))
        #expect(parsed.entries.map(\.path) == [["GitLab"]])
        #expect(parsed.entries[0].current.names == ["password", "username", "url", "otp", "notes", "tags"])
        #expect(parsed.skipped == [SkippedItem(item: "line 3 ('Old')", reason: "archived in 1Password")])
    }

    @Test func keePassXCLeavesTheRootGroupOut() throws {
        let text = "\"Group\",\"Title\",\"Username\",\"Password\",\"URL\",\"Notes\",\"TOTP\",\"Icon\",\"Last Modified\",\"Created\"\n"
            + "\"Passwords/Web\",\"GitHub\",\"alice\",\"pw\",\"https://github.com\",\"line1\nline2\",\"\",\"0\",\"2026-11-26T16:18:04Z\",\"2026-11-26T16:18:03Z\"\n"
        let entry = try #require(try CSVImport.read(bytes(text)).entries.first)
        #expect(entry.path == ["Web", "GitHub"])
        #expect(entry.created == 1_795_709_883_000 && entry.current.modified == 1_795_709_884_000)
    }

    @Test func anUnknownHeaderOrARowOfTheWrongWidthIsRefused() {
        let unknown = importError { _ = try CSVImport.read(bytes("site,secret\nx,y\n")) }
        guard case .unsupported(let reason, let hint) = unknown else { Issue.record("\(String(describing: unknown))"); return }
        #expect(reason == "line 1 is not a CSV header this import knows (2 columns)")
        #expect(hint.hasPrefix("vault import csv reads the exports of Chrome"))
        #expect(importError { _ = try CSVImport.read(bytes("name,url,username,password\na,b,c\n")) }
                == .malformed(location: "line 2", reason: "3 fields where the header has 4"))
        #expect(importError { _ = try CSVImport.read([]) } == .malformed(location: "line 1", reason: "no header: the file is empty"))
    }

    @Test func theExportIsBitwardensLayoutAndReadsBack() throws {
        let entries = [
            versions("Work/GitHub", [
                ([field("password", "p\"w", secret: true), field("username", "alice"), field("url", "https://github.com"),
                  field("otp", "JBSWY3DPEHPK3PXP", secret: true), field("notes", "a\nb"), field("pin", "1234", secret: true), field("multi", "x\ny")], 2_000),
                ([field("password", "old", secret: true)], 1_000),
            ]),
            versions("note", [([field("notes", "only")], 1_000)]),
        ]
        let result = try CSVExport.write(exportSource(entries))
        let text = String(decoding: result.data.unprotectedBytes, as: UTF8.self)
        #expect(text.hasPrefix("folder,favorite,type,name,notes,fields,reprompt,login_uri,login_username,login_password,login_totp\r\n"))
        #expect(result.omitted.map(\.item) == ["'Work/GitHub' field 'multi'", "the history of 1 entry"])
        let back = try CSVImport.read(result.data.unprotectedBytes)
        #expect(back.entries.map(\.name) == ["Work/GitHub", "note"])
        #expect(back.entries[0].current.names == ["password", "username", "url", "otp", "notes", "pin"])
        #expect(back.entries[0].current.text("password") == "p\"w" && back.entries[0].current.text("notes") == "a\nb")
        #expect(back.entries[1].current.names == ["notes"])
    }
}
