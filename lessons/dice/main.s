; dice: random bytes from a shift register.
;
; random_byte steps a 16-bit Galois LFSR eight times (random-byte); a die
; face 1..6 is three of its bits, drawn again whenever they come out 6 or 7.
; A roll shows twelve faces, each held a little longer than the last; the
; holding is a counting loop that burns a fixed number of cycles
; (counting-spin). Meanwhile NMI keeps drawing `face` in mid-screen.

PPUCTRL   = $2000
PPUMASK   = $2001
PPUSTATUS = $2002
PPUSCROLL = $2005
PPUADDR   = $2006
PPUDATA   = $2007
FACE_AT   = $21CF           ; nametable address: row 14, column 15

.segment "HEADER"
    .byte "NES", $1A, 1, 1  ; 16K PRG, 8K CHR
    .byte $00, $00          ; mapper 0 (NROM)
    .res 8, 0

.zeropage
frame:   .res 1
seed:    .res 2             ; the LFSR; it must never be all zero
face:    .res 1             ; tile 1..6, drawn by NMI
tumbles: .res 1
delay:   .res 1             ; the counting spin's outer count

.code
reset:
    sei
    cld
    ldx #$FF
    txs
    inx
    stx PPUCTRL
    stx PPUMASK
    stx $4010
    bit PPUSTATUS
@vblank1:
    bit PPUSTATUS
    bpl @vblank1
    txa
@clear:
    sta $00,x
    inx
    bne @clear
@vblank2:
    bit PPUSTATUS
    bpl @vblank2

    lda #$3F                ; palette 0: backdrop and the digits' colour
    sta PPUADDR
    stx PPUADDR
    lda #$0F
    sta PPUDATA
    lda #$30
    sta PPUDATA
    lda #$20                ; nametable $2000 to tile 0, attributes to 0
    sta PPUADDR
    stx PPUADDR
    ldy #4
    txa
@page:
    sta PPUDATA
    inx
    bne @page
    dey
    bne @page
    lda #$E1                ; any seed but zero; a game would stir in the
    sta seed                ; frame count at a button press
    lda #$AC
    sta seed+1
    lda #1
    sta face
    lda #%10000000
    sta PPUCTRL
    lda #%00001010
    sta PPUMASK

roll:
    lda #12
    sta tumbles
    lda #8
    sta delay
@tumble:
    jsr die_face
    sta face
    ldy delay
    jsr spin
    lda delay               ; slower each time: 8, 24, 40 ... 184
    clc
    adc #16
    sta delay
    dec tumbles
    bne @tumble
    ldx #120                ; then the result stands for two seconds
@hold:
    lda frame
@frame:
    cmp frame
    beq @frame
    dex
    bne @hold
    jmp roll

; spin: burn about Y * 1286 cycles (Y / 23 of an NTSC frame), counting X.
spin:
    ldx #0
@count:
    dex                     ; 2 cycles
    bne @count              ; 3 when taken: 256 rounds, 1279 cycles
    dey
    bne spin
    rts

; die_face: 1..6, each as likely, from three bits of a random byte.
die_face:
    jsr random_byte
    and #%00000111          ; 0..7
    cmp #6
    bcs die_face            ; 6 or 7: draw again rather than skew the odds
    adc #1                  ; carry is clear here
    rts

; random_byte: eight steps of a Galois LFSR, taps $0039, period 65535.
; Each step shifts the 16 bits left; when a 1 falls out of bit 15, the
; taps are XORed into the low byte. Returns the new low byte in A.
random_byte:
    ldy #8
    lda seed
@step:
    asl a
    rol seed+1
    bcc @no_tap
    eor #$39
@no_tap:
    dey
    bne @step
    sta seed
    rts

nmi:
    pha
    lda #>FACE_AT
    sta PPUADDR
    lda #<FACE_AT
    sta PPUADDR
    lda face
    sta PPUDATA
    lda #%10000000          ; PPUADDR moved the scroll: set it back
    sta PPUCTRL
    lda #0
    sta PPUSCROLL
    sta PPUSCROLL
    inc frame
    pla
irq:
    rti

.segment "CHARS"            ; tile 0 blank; tiles 1..6 the digits, plane 0
    .res 16, $00            ; (colour 1), plane 1 all zero
    .byte $18, $38, $18, $18, $18, $18, $7E, $00, 0, 0, 0, 0, 0, 0, 0, 0
    .byte $3C, $66, $06, $1C, $30, $60, $7E, $00, 0, 0, 0, 0, 0, 0, 0, 0
    .byte $3C, $66, $06, $1C, $06, $66, $3C, $00, 0, 0, 0, 0, 0, 0, 0, 0
    .byte $0C, $1C, $3C, $6C, $7E, $0C, $0C, $00, 0, 0, 0, 0, 0, 0, 0, 0
    .byte $7E, $60, $7C, $06, $06, $66, $3C, $00, 0, 0, 0, 0, 0, 0, 0, 0
    .byte $3C, $60, $7C, $66, $66, $66, $3C, $00, 0, 0, 0, 0, 0, 0, 0, 0

.segment "VECTORS"
    .word nmi, reset, irq
